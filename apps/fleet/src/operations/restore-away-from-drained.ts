import {
  NodeState,
  RestoreAsked,
  RestorePlan,
  planRestore as planRestoreRule,
  placeVm,
  placementCandidate,
} from '@app/fleet-domain';
import { withDrainReason } from '../nodes/drained-nodes';

/**
 * A restore (or a recovery) with no `to` goes where the freshest copy is; on a drained node it
 * goes instead to the node placement chooses among the others, which pulls the copy from there.
 * No other node fits, or `to` was named: the plan as it was (a drained `to` is then refused with
 * its reason when its RAM is held).
 */
export function planAwayFromDrained(
  plan: Exclude<RestorePlan, { kind: 'refused' }>,
  asked: RestoreAsked,
  live: readonly NodeState[],
  drainReasons: ReadonlyMap<string, string>,
  ramMb: number | undefined,
  nowMs: number,
): RestorePlan {
  if (asked.to !== undefined || !drainReasons.has(plan.to)) return plan;
  const placement = placeVm(
    { ram_mb: ramMb ?? 1, prefer_kvm: false },
    live
      .filter((node) => node.node_id !== plan.to)
      .map((node) => withDrainReason(placementCandidate(node, nowMs), drainReasons)),
  );
  if (placement.kind !== 'placed') return plan;
  // The copy read where it is: `from` that node, pulled by the node chosen.
  const from = asked.from ?? (plan.kind === 'replica' ? plan.to : undefined);
  const replanned = planRestore(asked, from, placement.node_id, live);
  return replanned.kind === 'refused' ? plan : replanned;
}

function planRestore(
  asked: RestoreAsked,
  from: string | undefined,
  to: string,
  live: readonly NodeState[],
): RestorePlan {
  return planRestoreRule({ ...asked, ...(from === undefined ? {} : { from }), to }, live);
}
