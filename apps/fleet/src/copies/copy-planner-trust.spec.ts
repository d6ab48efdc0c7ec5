import { CopyPlan, NodeState, nodeStateFromHeartbeat } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { heartbeat, vmRecord } from '../../../../test/support/heartbeats';
import { GrantedCopies } from '../nodes/granted-copies';
import { NodeTokens } from '../nodes/node-tokens';
import { NodesRepository } from '../nodes/nodes.repository';
import { VmHostClient } from '../vms/vm-host.client';
import { CopyPlannerService } from './copy-planner.service';

const SECRET = 'node-secret-0123456789abcdef0123456789abcdef';

describe('CopyPlannerService: what it trusts of the copies nodes report', () => {
  let clock: FakeClock;
  let nodes: NodeState[];
  let sent: Array<{ node: string; vm: string; plan: CopyPlan }>;
  let granted: GrantedCopies;
  let planner: CopyPlannerService;

  function node(
    node_id: string,
    vms: Array<{ vm_id: string; disk_gb?: number }>,
    committable_mb: number,
    replicas: NodeState['replicas'] = [],
  ): NodeState {
    return nodeStateFromHeartbeat(
      heartbeat({
        node_id,
        wg_ip: `10.8.0.${node_id.charCodeAt(node_id.length - 1) - 96}`,
        spawn_port: 9100,
        vms: vms.map(({ vm_id, disk_gb }) => ({
          ...vmRecord(vm_id),
          copies: { count: 1, every_s: 60 },
          ...(disk_gb === undefined ? {} : { disk_gb }),
        })),
        disk_room: {
          room_mb: 60_000,
          committed_mb: 10_000,
          committable_mb,
          reserve_mb: 2048,
          overcommit: 1,
        },
        replicas,
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
    granted = new GrantedCopies();
    const repository = {
      listLive: (notBeforeMs: number) =>
        Promise.resolve(nodes.filter((state) => state.received_at_ms >= notBeforeMs)),
    } as unknown as NodesRepository;
    const client = {
      putCopyPlan: (target: NodeState, vm: string, plan: CopyPlan) => {
        sent.push({ node: target.node_id, vm, plan });
        return Promise.resolve('set');
      },
    } as unknown as VmHostClient;
    planner = new CopyPlannerService(
      repository,
      new NodeTokens({ secret: SECRET }),
      client,
      clock,
      granted,
    );
  });

  it("sizes a copy by the VM's disk_gb, never by a size a holder reports", async () => {
    nodes.push(
      node('node-a', [{ vm_id: 'vm-1', disk_gb: 10 }], 50_000),
      // Claims a copy of vm-1 of a petabyte: it must not make every node look too small.
      node('node-h', [], 50_000, [
        {
          vm_id: 'vm-1',
          source_node_id: 'node-a',
          copied_at: '2026-08-06T11:59:00Z',
          size_bytes: 1e15,
        },
      ]),
      node('node-b', [], 20_000),
    );
    await planner.planAll();
    expect(sent).toHaveLength(1);
    expect(sent[0].plan.peers).toHaveLength(1);
  });

  it("refuses a peer without room for the VM's disk_gb", async () => {
    nodes.push(
      node('node-a', [{ vm_id: 'vm-1', disk_gb: 40 }], 50_000),
      node('node-b', [], 20_000),
    );
    await planner.planAll();
    expect(sent).toEqual([]);
  });

  it('records the peers it granted, with the grant issued-at', async () => {
    nodes.push(node('node-a', [{ vm_id: 'vm-1', disk_gb: 1 }], 50_000), node('node-b', [], 20_000));
    await planner.planAll();
    expect(granted.issuedAt('vm-1', 'node-b')).toBe(clock.wallNow());
    expect(granted.issuedAt('vm-1', 'node-a')).toBeUndefined();
  });
});
