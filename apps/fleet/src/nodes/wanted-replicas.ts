import type { HeartbeatReplica, NodeState } from '@app/fleet-domain';

/**
 * Of the copies a node reports holding, those of VMs the fleet still has: some node's record
 * (live or silent, this one's included) lists the VM. A copy of a VM deleted, or forgotten
 * with its dead node, is not wanted: its peer removes it after a grace (24 h).
 */
export function wantedReplicaVmIds(
  reported: readonly HeartbeatReplica[] | undefined,
  all: readonly NodeState[],
): string[] | undefined {
  if (!reported || reported.length === 0) return undefined;
  const listed = new Set(all.flatMap((node) => node.vms.map((vm) => vm.vm_id)));
  return reported.map((replica) => replica.vm_id).filter((vmId) => listed.has(vmId));
}
