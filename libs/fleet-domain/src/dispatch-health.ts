/**
 * A node whose agent cannot be reached keeps heartbeating (the heartbeat goes out, the spawn
 * API does not answer) and, with the most free RAM, would win every placement. Its failed
 * dispatches are kept with its state, so placement passes it over for a while, with backoff,
 * on every controller sharing the state.
 */

/** The window a refusal counts failures in ("failed 3 times in the last 40 s"). */
export const DISPATCH_FAILURE_WINDOW_MS = 40_000;
/** Passed over for this long after one failure, doubling with each failure in a row. */
export const DISPATCH_BACKOFF_BASE_MS = 5_000;
export const DISPATCH_BACKOFF_MAX_MS = 60_000;
/** Failure times kept: enough to count the window and size the backoff. */
export const DISPATCH_FAILURES_KEPT = 8;
/** A reason is a word (`unreachable`, `failed`): never what a prober could learn from. */
export const DISPATCH_REASON_MAX_LENGTH = 80;

/** Dispatches to a node that failed in a row since its last successful one. */
export interface DispatchFailures {
  /** When each failed (controller clock, ms), oldest first; at most the last eight. */
  at_ms: number[];
  /** How many failed in a row: sizes the backoff when more than eight did. */
  in_a_row: number;
  /** Why the last one failed, e.g. `unreachable`. */
  reason: string;
}

export function dispatchBackoffMs(inARow: number): number {
  if (inARow <= 0) return 0;
  return Math.min(
    DISPATCH_BACKOFF_BASE_MS * 2 ** Math.min(inARow - 1, 16),
    DISPATCH_BACKOFF_MAX_MS,
  );
}

/** The failures after one more, at `nowMs`, for `reason`. */
export function withDispatchFailure(
  failures: DispatchFailures | undefined,
  reason: string,
  nowMs: number,
): DispatchFailures {
  return {
    at_ms: [...(failures?.at_ms ?? []), nowMs].slice(-DISPATCH_FAILURES_KEPT),
    in_a_row: (failures?.in_a_row ?? 0) + 1,
    reason: reason.slice(0, DISPATCH_REASON_MAX_LENGTH),
  };
}

/** When placement may try the node again (ms); undefined when it never failed. */
export function dispatchRetryAtMs(failures: DispatchFailures | undefined): number | undefined {
  if (!failures || failures.at_ms.length === 0) return undefined;
  return failures.at_ms[failures.at_ms.length - 1] + dispatchBackoffMs(failures.in_a_row);
}

/**
 * Why placement passes the node over at `nowMs`, e.g. `dispatch failed 3 times in the last
 * 40 s: unreachable (tried again in 12.0 s)`; undefined once its backoff is over.
 */
export function dispatchTrouble(
  failures: DispatchFailures | undefined,
  nowMs: number,
): string | undefined {
  const retryAt = dispatchRetryAtMs(failures);
  if (failures === undefined || retryAt === undefined || nowMs >= retryAt) return undefined;
  const recent = failures.at_ms.filter((at) => nowMs - at <= DISPATCH_FAILURE_WINDOW_MS).length;
  const times = recent === 1 ? 'once' : `${recent} times`;
  const wait = ((retryAt - nowMs) / 1000).toFixed(1);
  return `dispatch failed ${times} in the last ${DISPATCH_FAILURE_WINDOW_MS / 1000} s: ${failures.reason} (tried again in ${wait} s)`;
}
