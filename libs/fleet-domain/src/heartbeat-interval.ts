import { NODE_STALE_AFTER_MS } from './fleet.constants';

/**
 * The agent waits its interval less or more by up to this fraction between beats, so a fleet
 * restarted together does not beat in lockstep.
 */
export const HEARTBEAT_JITTER = 0.1;

/** The longest a heartbeat request (once composed) may take before the agent abandons it. */
export const MAX_HEARTBEAT_REQUEST_TIMEOUT_MS = 5_000;

/**
 * What reading the node's VMs before a beat may take: every VM's QMP question at once, each
 * answered or given up within 2 s.
 */
export const HEARTBEAT_COMPOSE_ALLOWANCE_MS = 2_000;

/** How long a heartbeat request may take at this interval: 80% of it, at most 5 s. */
export function heartbeatRequestTimeoutMs(intervalMs: number): number {
  return Math.min(MAX_HEARTBEAT_REQUEST_TIMEOUT_MS, Math.floor(intervalMs * 0.8));
}

/**
 * The longest the controller may hear nothing from an agent beating every `intervalS` seconds
 * when every beat is delivered: one beat received as it was sent but answered only at its
 * timeout, the longest jittered wait, the VMs read, and the next beat received only at its
 * timeout.
 */
export function longestHeartbeatGapMs(intervalS: number): number {
  const intervalMs = intervalS * 1000;
  return (
    Math.ceil(intervalMs * (1 + HEARTBEAT_JITTER)) +
    2 * heartbeatRequestTimeoutMs(intervalMs) +
    HEARTBEAT_COMPOSE_ALLOWANCE_MS
  );
}

/** Whether beats every `intervalS` seconds keep a node listed: no gap reaches NODE_STALE_AFTER_MS. */
export function keepsNodeListed(intervalS: number): boolean {
  return longestHeartbeatGapMs(intervalS) < NODE_STALE_AFTER_MS;
}

/** The longest VM_HEARTBEAT_INTERVAL_S, in whole seconds, that keeps a node listed. */
export const MAX_HEARTBEAT_INTERVAL_S = ((): number => {
  let intervalS = 1;
  while (keepsNodeListed(intervalS + 1)) intervalS += 1;
  return intervalS;
})();
