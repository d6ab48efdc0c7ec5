import type { NodeState } from '@app/fleet-domain';
import { wantedReplicaVmIds } from './wanted-replicas';

const copy = (vm_id: string) => ({
  vm_id,
  source_node_id: 'n1',
  copied_at: '2026-12-05T04:17:00Z',
  size_bytes: 1,
});
const node = (vmIds: string[], node_id = 'n1') =>
  ({ node_id, vms: vmIds.map((vm_id) => ({ vm_id })) }) as NodeState;

describe('wantedReplicaVmIds', () => {
  it("keeps the copies of VMs some node's record lists, live or silent", () => {
    expect(
      wantedReplicaVmIds(
        [copy('vm-a'), copy('vm-b'), copy('vm-c')],
        [node(['vm-a']), node(['vm-c'])],
      ),
    ).toEqual(['vm-a', 'vm-c']);
  });

  it('keeps the copies of a node the controller has no record of (forgot it on a restart): they may be all that is left', () => {
    expect(
      wantedReplicaVmIds(
        [copy('vm-a'), { ...copy('vm-b'), source_node_id: 'n-gone' }],
        [node(['vm-c'])],
      ),
    ).toEqual(['vm-b']);
  });

  it('says nothing when the heartbeat reported no copy', () => {
    expect(wantedReplicaVmIds(undefined, [node(['vm-a'])])).toBeUndefined();
    expect(wantedReplicaVmIds([], [node(['vm-a'])])).toBeUndefined();
  });
});
