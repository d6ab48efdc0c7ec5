import { deriveNodeToken, verifyCopyGrant } from '@app/daemon';
import { HeartbeatReplica, NodeState } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { vmRecord } from '../../../../test/support/heartbeats';
import {
  PLANNER_SECRET as SECRET,
  SentPlan,
  copiesNode,
  copyPlanner,
} from '../../../../test/factories/copy-planner.factory';
import { COPY_GRANT_LIFE_MS, CopyPlannerService } from './copy-planner.service';

const COPIES = { count: 1, every_s: 60 };

describe('CopyPlannerService', () => {
  let clock: FakeClock;
  let nodes: NodeState[];
  let sent: SentPlan[];
  let unknown: Set<string>;
  let planner: CopyPlannerService;

  function node(
    node_id: string,
    vms: Array<{ vm_id: string; copies?: typeof COPIES }> = [],
    extra: { replicas?: HeartbeatReplica[]; committable_mb?: number | null; wg_ip?: string } = {},
  ): NodeState {
    const listed = vms.map(({ vm_id, copies }) => ({
      ...vmRecord(vm_id),
      ...(copies ? { copies } : {}),
    }));
    return copiesNode(clock, node_id, listed, extra);
  }

  beforeEach(() => {
    clock = new FakeClock();
    nodes = [];
    sent = [];
    unknown = new Set();
    planner = copyPlanner(clock, () => nodes, sent, unknown);
  });

  it('plans nothing on a fleet of one node', async () => {
    nodes.push(node('node-a', [{ vm_id: 'vm-1', copies: COPIES }]));
    expect(await planner.planAll()).toEqual({ pushed: [], failed: [] });
    expect(sent).toEqual([]);
  });

  it("sends a VM's agent its plan: a live peer with room, a grant signed with the peer's own token for that VM, valid an hour", async () => {
    nodes.push(node('node-a', [{ vm_id: 'vm-1', copies: COPIES }]), node('node-b'));
    await planner.planAll();
    expect(sent).toHaveLength(1);
    const [{ node: target, vm, plan }] = sent;
    expect({ target, vm, every_s: plan.every_s }).toEqual({
      target: 'node-a',
      vm: 'vm-1',
      every_s: 60,
    });
    expect(plan.peers).toEqual([
      {
        node_id: 'node-b',
        address: '10.8.0.2:9100',
        grant: expect.any(String),
        expires_at: new Date(clock.wallNow() + COPY_GRANT_LIFE_MS).toISOString(),
      },
    ]);
    const peerToken = deriveNodeToken(SECRET, 'node-b');
    expect(verifyCopyGrant(peerToken, 'node-b', plan.peers[0].grant, clock.wallNow())).toEqual({
      vm: 'vm-1',
      source: 'node-a',
      peer: 'node-b',
      expiresAtMs: clock.wallNow() + COPY_GRANT_LIFE_MS,
      issuedAtMs: clock.wallNow(),
    });
    // Another node's token does not verify it.
    expect(
      verifyCopyGrant(
        deriveNodeToken(SECRET, 'node-a'),
        'node-b',
        plan.peers[0].grant,
        clock.wallNow(),
      ),
    ).toEqual({ refused: 'grant not signed for this node' });
  });

  it('sends the plan again only when it changes or its grants pass half their life', async () => {
    nodes.push(node('node-a', [{ vm_id: 'vm-1', copies: COPIES }]), node('node-b'));
    await planner.planAll();
    clock.advance(10_000);
    nodes = [node('node-a', [{ vm_id: 'vm-1', copies: COPIES }]), node('node-b')];
    await planner.planAll();
    expect(sent).toHaveLength(1);
    clock.advance(COPY_GRANT_LIFE_MS / 2);
    nodes = [node('node-a', [{ vm_id: 'vm-1', copies: COPIES }]), node('node-b')];
    await planner.planAll();
    expect(sent).toHaveLength(2);
    expect(sent[1].plan.peers[0].grant).not.toBe(sent[0].plan.peers[0].grant);
  });

  it('keeps the peer holding the copy, moves it once that peer is gone, and tells a VM whose copies stop', async () => {
    const holding = [
      {
        vm_id: 'vm-1',
        source_node_id: 'node-a',
        copied_at: '2026-08-06T11:59:00Z',
        size_bytes: 1e9,
      },
    ];
    nodes.push(
      node('node-a', [{ vm_id: 'vm-1', copies: COPIES }]),
      node('node-b', [], { replicas: [...holding, { ...holding[0], vm_id: 'vm-9' }] }),
      node('node-c'),
    );
    await planner.planAll();
    expect(sent.map(({ plan }) => plan.peers.map((peer) => peer.node_id))).toEqual([['node-b']]);

    // node-b silent: the copy goes to node-c.
    clock.advance(31_000);
    nodes = [node('node-a', [{ vm_id: 'vm-1', copies: COPIES }]), node('node-c')];
    await planner.planAll();
    expect(sent[1].plan.peers.map((peer) => peer.node_id)).toEqual(['node-c']);

    nodes = [
      node('node-a', [{ vm_id: 'vm-1', copies: { count: 0, every_s: 60 } }]),
      node('node-c'),
    ];
    await planner.planAll();
    expect(sent[2].plan).toEqual({ every_s: 60, peers: [] });
  });

  it('passes over a peer without disk room, and VMs without a policy', async () => {
    nodes.push(
      node('node-a', [{ vm_id: 'vm-1', copies: COPIES }, { vm_id: 'vm-old' }]),
      node('node-b', [], { committable_mb: null }),
    );
    await planner.planAll();
    expect(sent).toEqual([]);
  });

  it('brackets an IPv6 peer address', async () => {
    nodes.push(
      node('node-a', [{ vm_id: 'vm-1', copies: COPIES }]),
      node('node-b', [], { wg_ip: 'fd00::2' }),
    );
    await planner.planAll();
    expect(sent[0].plan.peers[0].address).toBe('[fd00::2]:9100');
  });
});
