import { deriveNodeToken, verifyCopyGrant } from '@app/daemon';
import { CopyPlan, HeartbeatReplica, NodeState, nodeStateFromHeartbeat } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { heartbeat, vmRecord } from '../../../../test/support/heartbeats';
import { NodeTokens } from '../nodes/node-tokens';
import { NodesRepository } from '../nodes/nodes.repository';
import { VmHostClient } from '../vms/vm-host.client';
import { COPY_GRANT_LIFE_MS, CopyPlannerService } from './copy-planner.service';

const SECRET = 'node-secret-0123456789abcdef0123456789abcdef';
const COPIES = { count: 1, every_s: 60 };

describe('CopyPlannerService', () => {
  let clock: FakeClock;
  let nodes: NodeState[];
  let sent: Array<{ node: string; vm: string; plan: CopyPlan }>;
  let unknown: Set<string>;
  let planner: CopyPlannerService;

  function node(
    node_id: string,
    vms: Array<{ vm_id: string; copies?: typeof COPIES }> = [],
    extra: { replicas?: HeartbeatReplica[]; committable_mb?: number | null; wg_ip?: string } = {},
  ): NodeState {
    const committable = extra.committable_mb === undefined ? 50_000 : extra.committable_mb;
    return nodeStateFromHeartbeat(
      heartbeat({
        node_id,
        wg_ip: extra.wg_ip ?? `10.8.0.${node_id.charCodeAt(node_id.length - 1) - 96}`,
        spawn_port: 9100,
        vms: vms.map(({ vm_id, copies }) => ({
          ...vmRecord(vm_id),
          ...(copies ? { copies } : {}),
        })),
        ...(committable === null
          ? {}
          : {
              disk_room: {
                room_mb: 60_000,
                committed_mb: 10_000,
                committable_mb: committable,
                reserve_mb: 2048,
                overcommit: 1,
              },
            }),
        replicas: extra.replicas ?? [],
      }),
      clock.now(),
      undefined,
      clock.wallNow(),
      'own',
    );
  }

  beforeEach(() => {
    clock = new FakeClock();
    nodes = [];
    sent = [];
    unknown = new Set();
    const repository = {
      listLive: (notBeforeMs: number) =>
        Promise.resolve(nodes.filter((state) => state.received_at_ms >= notBeforeMs)),
    } as unknown as NodesRepository;
    const client = {
      putCopyPlan: (target: NodeState, vm: string, plan: CopyPlan) => {
        sent.push({ node: target.node_id, vm, plan });
        return Promise.resolve(unknown.has(vm) ? 'unknown' : 'set');
      },
    } as unknown as VmHostClient;
    planner = new CopyPlannerService(repository, new NodeTokens({ secret: SECRET }), client, clock);
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
