import type { HeartbeatReplica } from '@app/fleet-domain';
import type { NodesRepository } from './nodes.repository';

/** No node id is empty (ID_PATTERN): ownersOf excepting it leaves no node out. */
const NO_NODE = '';

/**
 * Of the copies a node reports holding, those still wanted: of VMs some stored node holds
 * (heldVmIds: listed, live or silent, this one's included, or held for a create or restore in
 * flight), or whose source node has no record at all (a controller restarted in memory mode
 * forgot a dead node: its VMs' copies may be all that is left of them, never pruned for that).
 * A copy of a VM deleted while its node's record stays is not wanted: its peer removes it after
 * a grace (24 h). Costs what the reported copies cost (ownersOf's index of VM ids), not a read
 * of every node: only the source nodes of copies whose VM nobody holds are looked up.
 */
export async function wantedReplicaVmIds(
  reported: readonly HeartbeatReplica[] | undefined,
  nodes: Pick<NodesRepository, 'ownersOf' | 'storedAmong'>,
): Promise<string[] | undefined> {
  if (!reported || reported.length === 0) return undefined;
  const held = await nodes.ownersOf(
    reported.map((replica) => replica.vm_id),
    NO_NODE,
  );
  const unheld = reported.filter((replica) => !held.has(replica.vm_id));
  const known = await nodes.storedAmong([
    ...new Set(unheld.map((replica) => replica.source_node_id)),
  ]);
  return reported
    .filter((replica) => held.has(replica.vm_id) || !known.has(replica.source_node_id))
    .map((replica) => replica.vm_id);
}
