import { HeartbeatReplica, NodeState } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { FakeEtcd } from '../../../../test/support/fake-etcd';
import { vmRecord } from '../../../../test/support/heartbeats';
import { SentPlan, copiesNode, copyPlanner } from '../../../../test/factories/copy-planner.factory';
import { EtcdCopyGrants } from '../nodes/etcd/etcd-copy-grants';
import { GrantedCopies } from '../nodes/granted-copies';
import { GrantedCopiesJob } from '../nodes/granted-copies.job';
import { Leadership } from '../nodes/leadership';
import { COPY_GRANT_LIFE_MS, CopyPlannerService } from './copy-planner.service';

/** A leadership the test hands over. */
class HandedLeadership extends Leadership {
  constructor(public leading: boolean) {
    super();
  }
  isLeader(): boolean {
    return this.leading;
  }
  tick(): Promise<void> {
    return Promise.resolve();
  }
  resign(): Promise<void> {
    return Promise.resolve();
  }
}

const copy = (vm_id: string, source_node_id = 'node-a'): HeartbeatReplica => ({
  vm_id,
  source_node_id,
  copied_at: '2026-08-06T11:59:00Z',
  size_bytes: 1_000_000,
});

describe('CopyPlannerService in etcd mode: the leader alone plans', () => {
  let clock: FakeClock;
  let etcd: FakeEtcd;
  let nodes: NodeState[];
  let sent: SentPlan[];

  const withVms = (node_id: string, vmIds: string[]): NodeState =>
    copiesNode(
      clock,
      node_id,
      vmIds.map((vm_id) => ({ ...vmRecord(vm_id), copies: { count: 1, every_s: 60 } })),
    );

  /** A controller on the shared etcd: its planner, its GrantedCopies and the job reading grants. */
  function controller(leading: boolean) {
    const leadership = new HandedLeadership(leading);
    const granted = new GrantedCopies();
    const grants = new EtcdCopyGrants(etcd, clock);
    const planner: CopyPlannerService = copyPlanner(clock, () => nodes, sent, new Set(), granted, {
      leadership,
      grants,
    });
    return { leadership, granted, planner, job: new GrantedCopiesJob(granted, grants) };
  }

  beforeEach(() => {
    clock = new FakeClock();
    etcd = new FakeEtcd(clock);
    sent = [];
    nodes = [withVms('node-a', ['vm-1', 'vm-2']), withVms('node-b', []), withVms('node-c', [])];
  });

  it('pushes no plan on a follower, and every plan on the leader', async () => {
    const leader = controller(true);
    const follower = controller(false);
    expect(await follower.planner.planAll()).toEqual({ pushed: [], failed: [] });
    expect(sent).toEqual([]);
    expect((await leader.planner.planAll()).pushed).toEqual(['vm-1', 'vm-2']);
    expect(sent.map(({ node, vm }) => `${node}/${vm}`)).toEqual(['node-a/vm-1', 'node-a/vm-2']);
    expect(await follower.planner.planAll()).toEqual({ pushed: [], failed: [] });
    expect(sent).toHaveLength(2);
  });

  it('pushes every plan anew once it leads again (another leader may have pushed others meanwhile)', async () => {
    const one = controller(true);
    await one.planner.planAll();
    // Unchanged and fresh: nothing to push while it keeps leading.
    expect((await one.planner.planAll()).pushed).toEqual([]);
    one.leadership.leading = false;
    await one.planner.planAll();
    one.leadership.leading = true;
    expect((await one.planner.planAll()).pushed).toEqual(['vm-1', 'vm-2']);
  });

  it('stops pushing within a round once its leadership lapses', async () => {
    const leader = controller(true);
    // First look: the round starts; second: vm-1 pushed; then lapsed: vm-2 not.
    jest
      .spyOn(leader.leadership, 'isLeader')
      .mockReturnValueOnce(true)
      .mockReturnValueOnce(true)
      .mockReturnValue(false);
    expect((await leader.planner.planAll()).pushed).toEqual(['vm-1']);
  });

  it("lets a follower take a peer's report of a copy the leader granted, and only that", async () => {
    const leader = controller(true);
    const follower = controller(false);
    await leader.planner.planAll();
    const peerOf = (vm: string) => sent.find((plan) => plan.vm === vm)!.plan.peers[0].node_id;
    const peer = peerOf('vm-1');
    // Before it reads the store, the follower refuses the report (fails closed) ...
    expect(follower.granted.keep(peer, [copy('vm-1')], undefined)).toEqual([]);
    await follower.job.read();
    // ... then takes it, with the grant's issued-at, and still refuses what was never granted.
    expect(follower.granted.issuedAt('vm-1', peer)).toBe(clock.wallNow());
    expect(follower.granted.keep(peer, [copy('vm-1'), copy('vm-9')], undefined)).toEqual([
      copy('vm-1'),
    ]);
    const stranger = ['node-b', 'node-c'].find((id) => id !== peerOf('vm-2'))!;
    expect(follower.granted.keep(stranger, [copy('vm-2')], undefined)).toEqual([]);
  });

  it('records renewed grants again, and a controller started later learns every live one', async () => {
    const leader = controller(true);
    await leader.planner.planAll();
    clock.advance(COPY_GRANT_LIFE_MS / 2);
    nodes = nodes.map((node) =>
      withVms(
        node.node_id,
        node.vms.map((vm) => vm.vm_id),
      ),
    );
    expect((await leader.planner.planAll()).pushed).toEqual(['vm-1', 'vm-2']);
    // 35 min after the first grants, 25 after the renewal: a new controller reads both VMs'.
    clock.advance(25 * 60_000);
    const late = controller(false);
    await late.job.read();
    const peer = sent.find((plan) => plan.vm === 'vm-2')!.plan.peers[0].node_id;
    expect(late.granted.issuedAt('vm-2', peer)).toBe(clock.wallNow() - 25 * 60_000);
  });

  it('pushes no plan whose grants it could not record (tried again next round)', async () => {
    const leader = controller(true);
    etcd.down = true;
    expect(await leader.planner.planAll()).toEqual({ pushed: [], failed: ['vm-1', 'vm-2'] });
    expect(sent).toEqual([]);
    etcd.down = false;
    expect((await leader.planner.planAll()).pushed).toEqual(['vm-1', 'vm-2']);
  });
});
