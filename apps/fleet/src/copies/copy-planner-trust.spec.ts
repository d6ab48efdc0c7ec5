import { NodeState } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { vmRecord } from '../../../../test/support/heartbeats';
import { SentPlan, copiesNode, copyPlanner } from '../../../../test/factories/copy-planner.factory';
import { GrantedCopies } from '../nodes/granted-copies';
import { CopyPlannerService } from './copy-planner.service';

describe('CopyPlannerService: what it trusts of the copies nodes report', () => {
  let clock: FakeClock;
  let nodes: NodeState[];
  let sent: SentPlan[];
  let granted: GrantedCopies;
  let planner: CopyPlannerService;

  function node(
    node_id: string,
    vms: Array<{ vm_id: string; disk_gb?: number }>,
    committable_mb: number,
    replicas: NodeState['replicas'] = [],
  ): NodeState {
    const listed = vms.map(({ vm_id, disk_gb }) => ({
      ...vmRecord(vm_id),
      copies: { count: 1, every_s: 60 },
      ...(disk_gb === undefined ? {} : { disk_gb }),
    }));
    return copiesNode(clock, node_id, listed, { committable_mb, replicas });
  }

  beforeEach(() => {
    clock = new FakeClock();
    nodes = [];
    sent = [];
    granted = new GrantedCopies();
    planner = copyPlanner(clock, () => nodes, sent, new Set(), granted);
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
