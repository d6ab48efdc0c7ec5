import { FakeClock } from '../../../../../test/support/fake-clock';
import { FakeEtcd } from '../../../../../test/support/fake-etcd';
import { COPY_GRANTS_PREFIX, EtcdCopyGrants, GRANT_RECORD_TTL_S } from './etcd-copy-grants';

describe('copy grants shared in etcd', () => {
  let clock: FakeClock;
  let etcd: FakeEtcd;
  let leader: EtcdCopyGrants;
  let follower: EtcdCopyGrants;

  const grant = (vmId: string, peerId: string) => ({
    vmId,
    peerId,
    issuedAtWallMs: clock.wallNow(),
  });

  beforeEach(() => {
    clock = new FakeClock();
    etcd = new FakeEtcd(clock);
    leader = new EtcdCopyGrants(etcd, clock);
    follower = new EtcdCopyGrants(etcd, clock);
  });

  it('gives every record at the first read, then only those written since', async () => {
    await leader.record('vm-1', [grant('vm-1', 'node-b'), grant('vm-1', 'node-c')]);
    expect(await follower.since()).toEqual([grant('vm-1', 'node-b'), grant('vm-1', 'node-c')]);
    expect(await follower.since()).toEqual([]);
    clock.advance(1_000);
    await leader.record('vm-2', [grant('vm-2', 'node-b')]);
    expect(await follower.since()).toEqual([grant('vm-2', 'node-b')]);
  });

  it('ends a record with its lease, 40 minutes after the last grant on it', async () => {
    await leader.record('vm-1', [grant('vm-1', 'node-b')]);
    clock.advance(GRANT_RECORD_TTL_S * 1000 + 1);
    expect(etcd.get(COPY_GRANTS_PREFIX + 'vm-1')).toBeUndefined();
    expect(await follower.since()).toEqual([]);
  });

  it('takes a new lease once the one it reuses has less than a grant’s life left', async () => {
    await leader.record('vm-1', [grant('vm-1', 'node-b')]);
    clock.advance(20 * 60_000);
    // 20 min left on the first lease: the renewed record goes on a new one, and outlives it.
    await leader.record('vm-1', [grant('vm-1', 'node-b')]);
    clock.advance(25 * 60_000);
    expect(etcd.get(COPY_GRANTS_PREFIX + 'vm-1')).toBeDefined();
  });

  it('reads nothing from records no controller could have written', async () => {
    const put = (key: string, value: string) =>
      etcd.txn([], [{ put: { key: COPY_GRANTS_PREFIX + key, value } }]);
    await put('vm-1', 'not json');
    await put('vm-2', '["node-b"]');
    await put('vm 3', '{"node-b":1}');
    await put('vm-4', '{"../node":1,"node-b":"x","node-c":2}');
    expect(await follower.since()).toEqual([{ vmId: 'vm-4', peerId: 'node-c', issuedAtWallMs: 2 }]);
  });
});
