import { compareIds } from './ids';

/** What choosing a VM's copy peers sees of one node. */
export interface CopyPeerCandidate {
  node_id: string;
  /** Heard from within 30 s (isLive). */
  live: boolean;
  /** Its heartbeat's disk_room.committable_mb; null: it sent none (an agent before copies). */
  committable_mb: number | null;
  /** Copies of other VMs it holds now (its heartbeat's replicas). */
  replicas_held: number;
  reserved: boolean;
}

export interface CopyPeersRequest {
  /** The node the VM runs on: never one of its peers. */
  vm_node_id: string;
  count: number;
  /** Room a copy needs on a peer, in MB (the VM's disk). */
  needed_mb: number;
  /** The nodes its copies went to so far (the last plan, or what the nodes report holding). */
  current: readonly string[];
}

/**
 * The nodes a VM's copies go to: live nodes other than its own with room for its disk. Sticky:
 * a node that holds a copy keeps it while it stays live and fits (a new peer means a full
 * copy). The others by spread: the fewest copies held first, then not reserved, then the most
 * room, then the smallest id, so the same fleet always gives the same answer. Fewer than
 * `count` when the fleet has fewer such nodes; none with one node.
 */
export function chooseCopyPeers(
  request: CopyPeersRequest,
  candidates: readonly CopyPeerCandidate[],
): string[] {
  const fits = candidates.filter(
    (node) =>
      node.live &&
      node.node_id !== request.vm_node_id &&
      node.committable_mb !== null &&
      node.committable_mb >= request.needed_mb,
  );
  const kept = request.current
    .filter((id, index) => request.current.indexOf(id) === index)
    .filter((id) => fits.some((node) => node.node_id === id))
    .slice(0, request.count);
  const others = fits
    .filter((node) => !kept.includes(node.node_id))
    .sort(
      (a, b) =>
        a.replicas_held - b.replicas_held ||
        Number(a.reserved) - Number(b.reserved) ||
        (b.committable_mb ?? 0) - (a.committable_mb ?? 0) ||
        compareIds(a.node_id, b.node_id),
    );
  return [...kept, ...others.map((node) => node.node_id)].slice(0, Math.max(0, request.count));
}
