import { HeartbeatReplica, NodeState, toRfc3339 } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { vmRecord } from '../../../../test/support/heartbeats';
import { SentPlan, copiesNode, copyPlanner } from '../../../../test/factories/copy-planner.factory';
import { InMemoryNodeDrains } from '../nodes/memory/in-memory-node-drains.repository';
import { CopyPlannerService } from './copy-planner.service';
import { chooseDrainAwarePeers } from './drain-aware-peers';

const ONE = { count: 1, every_s: 60 };
const TWO = { count: 2, every_s: 60 };

describe('copy peers and the drain', () => {
  let clock: FakeClock;
  let nodes: NodeState[];
  let sent: SentPlan[];
  let drains: InMemoryNodeDrains;
  let planner: CopyPlannerService;

  const copyOf = (vm_id: string, source_node_id: string): HeartbeatReplica => ({
    vm_id,
    source_node_id,
    // Taken before the heartbeat that reports it.
    copied_at: toRfc3339(clock.wallNow() - 1_000),
    size_bytes: 1_000_000,
  });
  const vmNode = (id: string, copies = ONE) =>
    copiesNode(clock, id, [{ ...vmRecord('vm-1'), copies }]);
  const peer = (id: string, replicas: HeartbeatReplica[] = []) =>
    copiesNode(clock, id, [], { replicas });
  const lastPeers = () => sent[sent.length - 1]?.plan.peers.map((one) => one.node_id);

  beforeEach(() => {
    clock = new FakeClock();
    sent = [];
    drains = new InMemoryNodeDrains();
    planner = copyPlanner(clock, () => nodes, sent, new Set(), undefined, {}, drains);
  });

  it('never picks a drained node as a new copy peer, and picks it again once undrained', async () => {
    // node-b holds fewest copies and would be chosen first.
    nodes = [vmNode('node-a'), peer('node-b'), peer('node-c', [copyOf('vm-9', 'node-x')])];
    await drains.drain('node-b', clock.wallNow());
    await planner.planAll();
    expect(lastPeers()).toEqual(['node-c']);

    // Only the drained node left beside the VM's own: no peer at all rather than it.
    nodes = [vmNode('node-a'), peer('node-b')];
    await planner.planAll();
    expect(lastPeers()).toEqual([]);

    await drains.undrain('node-b');
    await planner.planAll();
    expect(lastPeers()).toEqual(['node-b']);
  });

  it("keeps a drained peer holding the VM's only copy until a new copy is complete elsewhere", async () => {
    nodes = [vmNode('node-a'), peer('node-b'), peer('node-c')];
    await planner.planAll();
    expect(lastPeers()).toEqual(['node-b']);
    nodes = [vmNode('node-a'), peer('node-b', [copyOf('vm-1', 'node-a')]), peer('node-c')];

    await drains.drain('node-b', clock.wallNow());
    await planner.planAll();
    // A new peer elsewhere, the drained one still fed meanwhile.
    expect(lastPeers()).toEqual(['node-c', 'node-b']);

    // node-c reports the copy complete: the drained node leaves the plan (its copy stays there).
    nodes = [
      vmNode('node-a'),
      peer('node-b', [copyOf('vm-1', 'node-a')]),
      peer('node-c', [copyOf('vm-1', 'node-a')]),
    ];
    await planner.planAll();
    expect(lastPeers()).toEqual(['node-c']);
  });

  it('with two copies wanted and no room for a third peer, keeps one drained holder while no new peer has a complete copy', () => {
    const live = [
      vmNode('node-a', TWO),
      peer('node-b', [copyOf('vm-1', 'node-a')]),
      peer('node-c', [copyOf('vm-1', 'node-a')]),
      peer('node-d'),
      peer('node-e'),
    ];
    const request = {
      vmId: 'vm-1',
      sourceNodeId: 'node-a',
      count: 2,
      neededMb: 0,
      current: ['node-b', 'node-c'],
      live,
      held: new Map<string, number>(),
    };
    // One of two drained: the other holder stays, a new peer beside it; the drained copy rests.
    expect(chooseDrainAwarePeers({ ...request, drained: new Set(['node-b']) })).toEqual([
      'node-c',
      'node-d',
    ]);
    // Both drained: one new peer, and one drained holder still fed until the new ones hold one.
    expect(chooseDrainAwarePeers({ ...request, drained: new Set(['node-b', 'node-c']) })).toEqual([
      'node-d',
      'node-b',
    ]);
    // None drained: as before, sticky.
    expect(chooseDrainAwarePeers({ ...request, drained: new Set() })).toEqual(['node-b', 'node-c']);
  });
});
