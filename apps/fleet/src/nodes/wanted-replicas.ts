import type { HeartbeatReplica, NodeState } from '@app/fleet-domain';

/**
 * Of the copies a node reports holding, those still wanted: of VMs some node's record lists
 * (live or silent, this one's included), or whose source node has no record at all (a
 * controller restarted in memory mode forgot a dead node: its VMs' copies may be all that is
 * left of them, never pruned for that). A copy of a VM deleted while its node's record stays
 * is not wanted: its peer removes it after a grace (24 h).
 */
export function wantedReplicaVmIds(
  reported: readonly HeartbeatReplica[] | undefined,
  all: readonly NodeState[],
): string[] | undefined {
  if (!reported || reported.length === 0) return undefined;
  const listed = new Set(all.flatMap((node) => node.vms.map((vm) => vm.vm_id)));
  const known = new Set(all.map((node) => node.node_id));
  return reported
    .filter((replica) => listed.has(replica.vm_id) || !known.has(replica.source_node_id))
    .map((replica) => replica.vm_id);
}
