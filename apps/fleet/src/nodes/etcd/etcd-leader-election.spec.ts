import { FakeClock } from '../../../../../test/support/fake-clock';
import { FakeEtcd } from '../../../../../test/support/fake-etcd';
import { LEADERSHIP_TICK_MS } from '../leadership';
import { EtcdLeaderElection, LEADER_KEY, LEADER_LEASE_S } from './etcd-leader-election';

describe('leader election among controllers on one etcd', () => {
  let clock: FakeClock;
  let etcd: FakeEtcd;

  beforeEach(() => {
    clock = new FakeClock();
    etcd = new FakeEtcd(clock);
  });

  it('elects one leader; the other follows while the leader renews', async () => {
    const one = new EtcdLeaderElection(etcd, clock, 'one');
    const two = new EtcdLeaderElection(etcd, clock, 'two');
    await one.tick();
    await two.tick();
    expect([one.isLeader(), two.isLeader()]).toEqual([true, false]);
    for (let tick = 0; tick < 10; tick++) {
      clock.advance(LEADERSHIP_TICK_MS);
      await one.tick();
      await two.tick();
      expect([one.isLeader(), two.isLeader()]).toEqual([true, false]);
    }
    expect(etcd.get(LEADER_KEY)).toBe('one');
  });

  it('hands over within the lease and a tick when the leader dies', async () => {
    const changes: boolean[] = [];
    const one = new EtcdLeaderElection(etcd, clock, 'one');
    const two = new EtcdLeaderElection(etcd, clock, 'two', (leading) => changes.push(leading));
    await one.tick();
    await two.tick();
    // `one` dies: it renews no more.
    let waitedMs = 0;
    while (!two.isLeader()) {
      clock.advance(LEADERSHIP_TICK_MS);
      waitedMs += LEADERSHIP_TICK_MS;
      await two.tick();
      expect(waitedMs).toBeLessThanOrEqual(LEADER_LEASE_S * 1000 + LEADERSHIP_TICK_MS);
    }
    expect(etcd.get(LEADER_KEY)).toBe('two');
    expect(changes).toEqual([true]);
  });

  it('steps down by its own clock when it cannot reach etcd, before its lease can end there', async () => {
    const one = new EtcdLeaderElection(etcd, clock, 'one');
    await one.tick();
    etcd.down = true;
    clock.advance(LEADERSHIP_TICK_MS);
    await one.tick();
    expect(one.isLeader()).toBe(true);
    clock.advance(LEADER_LEASE_S * 1000 - LEADERSHIP_TICK_MS);
    // Its lease may end in etcd now: it no longer counts itself leader, even between ticks.
    expect(one.isLeader()).toBe(false);
    await one.tick();
    expect(one.isLeader()).toBe(false);
    etcd.down = false;
    clock.advance(LEADERSHIP_TICK_MS);
    await one.tick();
    expect(one.isLeader()).toBe(true);
  });

  it('gives the leadership up on resign, so another takes over at its next tick', async () => {
    const one = new EtcdLeaderElection(etcd, clock, 'one');
    const two = new EtcdLeaderElection(etcd, clock, 'two');
    await one.tick();
    await one.resign();
    expect(one.isLeader()).toBe(false);
    await two.tick();
    expect(two.isLeader()).toBe(true);
  });
});
