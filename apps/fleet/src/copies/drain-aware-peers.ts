import { MAX_VM_COPIES, NodeState, chooseCopyPeers } from '@app/fleet-domain';

/** What the planner asks of one VM: as chooseCopyPeers, with the nodes it may choose among. */
export interface DrainAwareRequest {
  vmId: string;
  /** The node that runs the VM (the copies' source). */
  sourceNodeId: string;
  count: number;
  neededMb: number;
  /** Its peers so far (the last plan's, then the nodes holding a copy from this source). */
  current: readonly string[];
  live: readonly NodeState[];
  /** How many copies each node holds (this round's running count). */
  held: ReadonlyMap<string, number>;
  /** Nodes drained (`ppn-fleet node drain`): chosen as no new copy peer. */
  drained: ReadonlySet<string>;
}

/**
 * A VM's copy peers with the drain respected: chosen (chooseCopyPeers: room, spread, sticky)
 * among the nodes not drained only, so a drained node never becomes a new peer, nor stays one
 * for good. A drained node that is a current peer and holds a complete copy is kept as well
 * (still fed, its copy fresh) until the chosen nodes hold the VM's `count` complete copies,
 * within the MAX_VM_COPIES peers a plan carries; where that leaves no room, one drained holder
 * stays while no chosen node has a complete copy yet, so the plan never stops feeding the VM's
 * only complete copy.
 * A copy on a node left out of the plan stays there anyway (kept while the VM exists).
 */
export function chooseDrainAwarePeers(request: DrainAwareRequest): string[] {
  const { vmId, sourceNodeId, drained } = request;
  const chosen = chooseCopyPeers(
    {
      vm_node_id: sourceNodeId,
      count: request.count,
      needed_mb: request.neededMb,
      current: request.current.filter((id) => !drained.has(id)),
    },
    request.live
      .filter((peer) => !drained.has(peer.node_id))
      .map((peer) => ({
        node_id: peer.node_id,
        live: true,
        committable_mb: peer.disk_room?.committable_mb ?? null,
        replicas_held: request.held.get(peer.node_id) ?? 0,
        reserved: peer.reserved,
      })),
  );
  const holdsCopy = (nodeId: string) =>
    request.live.some(
      (peer) =>
        peer.node_id === nodeId &&
        peer.replicas.some((copy) => copy.vm_id === vmId && copy.source_node_id === sourceNodeId),
    );
  const complete = chosen.filter(holdsCopy).length;
  if (complete >= request.count) return chosen;
  const keptDrained = [...new Set(request.current)]
    .filter((id) => drained.has(id) && id !== sourceNodeId && holdsCopy(id))
    .slice(0, request.count - complete);
  const room = MAX_VM_COPIES - chosen.length;
  if (keptDrained.length <= room) return [...chosen, ...keptDrained];
  // No room for them all: while no chosen node has a complete copy yet, a drained holder takes
  // the last place, so the plan always feeds one complete copy.
  if (complete > 0 || keptDrained.length === 0) return [...chosen, ...keptDrained.slice(0, room)];
  return [...chosen.slice(0, MAX_VM_COPIES - 1), keptDrained[0]];
}
