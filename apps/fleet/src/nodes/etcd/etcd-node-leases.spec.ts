import { FakeClock } from '../../../../../test/support/fake-clock';
import { FakeEtcd } from '../../../../../test/support/fake-etcd';
import { EtcdNodeLeases, GENERATION_PREFIX, LEASE_PREFIX } from './etcd-node-leases';

describe('node leases in etcd', () => {
  let clock: FakeClock;
  let etcd: FakeEtcd;
  let leases: EtcdNodeLeases;
  /** Another controller on the same etcd. */
  let other: EtcdNodeLeases;

  beforeEach(() => {
    clock = new FakeClock();
    etcd = new FakeEtcd(clock);
    leases = new EtcdNodeLeases(etcd, 45);
    other = new EtcdNodeLeases(etcd, 45);
  });

  it('answers fence_after_s once the lease is renewed, and keeps one lease alive through either controller', async () => {
    expect(await leases.renew('node-a', clock.wallNow())).toBe(45);
    clock.advance(30_000);
    expect(await other.renew('node-a', clock.wallNow())).toBe(45);
    clock.advance(30_000);
    expect(await leases.renew('node-a', clock.wallNow())).toBe(45);
    clock.advance(30_000);
    // 90 s after the first renewal, still live: each renewal kept the same key alive.
    expect(etcd.get(LEASE_PREFIX + 'node-a')).toBeDefined();
    expect(await leases.lapsed(clock.wallNow())).toEqual([]);
  });

  it('answers no fence_after_s when etcd cannot be reached', async () => {
    etcd.down = true;
    expect(await leases.renew('node-a', clock.wallNow())).toBeUndefined();
  });

  it('finds a node lapsed only once its lease ended and its last renewal is older than the margin', async () => {
    const renewedAt = clock.wallNow();
    await leases.renew('node-a', renewedAt);
    clock.advance(44_000);
    expect(await leases.lapsed(clock.wallNow() - 90_000)).toEqual([]);
    clock.advance(2_000);
    // Lease gone (46 s), but only 46 s since the renewal: not yet.
    expect(await leases.lapsed(clock.wallNow() - 90_000)).toEqual([]);
    clock.advance(45_000);
    expect(await leases.lapsed(clock.wallNow() - 90_000)).toEqual([
      { nodeId: 'node-a', renewedAtWallMs: renewedAt, recovering: false },
    ]);
  });

  it('does not renew the lease of a node being recovered, until its recovery ends', async () => {
    await leases.renew('node-a', clock.wallNow());
    clock.advance(100_000);
    expect(await leases.beginRecovery('node-a')).toBe(true);
    expect(await other.renew('node-a', clock.wallNow())).toBeUndefined();
    expect((await leases.lapsed(0))[0]).toMatchObject({ nodeId: 'node-a', recovering: true });
    await leases.endRecovery('node-a');
    expect(await leases.lapsed(clock.wallNow())).toEqual([]);
    expect(await other.renew('node-a', clock.wallNow())).toBe(45);
  });

  it('will not mark a node whose lease is live for recovery', async () => {
    await leases.renew('node-a', clock.wallNow());
    expect(await leases.beginRecovery('node-a')).toBe(false);
  });

  it('refuses declare-dead while the lease is live, takes it once the lease ended, and knows no unknown node', async () => {
    const renewedAt = clock.wallNow();
    await leases.renew('node-a', renewedAt);
    clock.advance(10_000);
    expect(await leases.declareDead('node-a')).toEqual({
      kind: 'lease-live',
      renewedAtWallMs: renewedAt,
      leftS: 35,
    });
    clock.advance(40_000);
    expect(await leases.declareDead('node-a')).toEqual({
      kind: 'declared',
      renewedAtWallMs: renewedAt,
    });
    // Marked: the leader recovers it at its next pass, without waiting for the margin.
    expect(await leases.lapsed(0)).toEqual([
      { nodeId: 'node-a', renewedAtWallMs: renewedAt, recovering: true },
    ]);
    expect(await leases.declareDead('node-b')).toEqual({ kind: 'unknown' });
  });

  it('raises a VM generation by one each time and reads them back', async () => {
    expect(await leases.generationsOf(['vm-1'])).toEqual(new Map());
    expect(await leases.raiseGeneration('vm-1')).toBe(1);
    expect(await other.raiseGeneration('vm-1')).toBe(2);
    expect(etcd.get(GENERATION_PREFIX + 'vm-1')).toBe('2');
    expect(await leases.generationsOf(['vm-1', 'vm-2'])).toEqual(new Map([['vm-1', 2]]));
  });
});
