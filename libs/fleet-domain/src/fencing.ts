/**
 * Bounds of self-fencing (etcd mode only): a node may keep its protected VMs running until
 * `fence_after_s` seconds after it sent the heartbeat whose answer carried that value.
 */
export const MIN_FENCE_AFTER_S = 10;
export const MAX_FENCE_AFTER_S = 600;
export const DEFAULT_FENCE_AFTER_S = 45;
export const DEFAULT_RECOVER_AFTER_S = 90;
/** The most VM ids a heartbeat lists as fenced (as many as a node can run). */
export const MAX_FENCED_VMS_REPORTED = 1024;

/** The agent's default heartbeat interval, seconds: recovery waits two of them past fencing. */
export const FENCING_HEARTBEAT_INTERVAL_S = 5;

/**
 * Why recover_after_s does not leave the fenced node's VMs time to be ended before their
 * copies start elsewhere, or undefined when it does: it must exceed fence_after_s plus two
 * heartbeat intervals.
 */
export function recoverAfterProblem(
  fenceAfterS: number,
  recoverAfterS: number,
): string | undefined {
  const least = fenceAfterS + 2 * FENCING_HEARTBEAT_INTERVAL_S;
  if (recoverAfterS > least) return undefined;
  return `VM_FLEET_RECOVER_AFTER_S (${recoverAfterS}) must be more than VM_FLEET_FENCE_AFTER_S (${fenceAfterS}) + 2 x the heartbeat interval (${FENCING_HEARTBEAT_INTERVAL_S} s) = ${least}: a node's VMs must be fenced before their copies start elsewhere`;
}
