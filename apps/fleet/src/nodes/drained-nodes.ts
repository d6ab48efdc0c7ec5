import { PlacementCandidate, drainedReason, toRfc3339 } from '@app/fleet-domain';
import { NodeDrains } from './node-drains.repository';

/** Each drained node's reason for placement (`drained since ...`), by node id. */
export async function drainReasons(
  drains: NodeDrains | undefined,
): Promise<ReadonlyMap<string, string>> {
  return drains ? drainReasonsOf(await drains.drainedSince()) : new Map();
}

/** Each drained node's reason, from since when each is drained. */
export function drainReasonsOf(since: ReadonlyMap<string, number>): ReadonlyMap<string, string> {
  return new Map([...since].map(([nodeId, ms]) => [nodeId, drainedReason(toRfc3339(ms))]));
}

/** The candidate, passed over with its reason when its node is drained. */
export function withDrainReason<T extends PlacementCandidate>(
  candidate: T,
  reasons: ReadonlyMap<string, string>,
): T {
  const drained = reasons.get(candidate.node_id);
  return drained === undefined ? candidate : { ...candidate, drained };
}
