/**
 * When an agent starts a VM again whose process ended while it should run (a crash, a power
 * cut, a start that failed): at once after a boot, then with a backoff that doubles from 5 s to
 * 5 min, as Nomad's and systemd's restart policies do. After CRASH_LOOP_FAILURES failures in a
 * row the VM is listed Error with the reason, and is still tried at the backoff's pace.
 */
export const RESTART_BACKOFF_FIRST_MS = 5_000;
export const RESTART_BACKOFF_LONGEST_MS = 5 * 60_000;
export const CRASH_LOOP_FAILURES = 3;
/** A VM that has run this long since its last start is steady again: its failures are forgotten. */
export const STEADY_RUN_MS = 10 * 60_000;
/** Most VMs an agent starts at once (after a boot, after crashes): never a thundering herd. */
export const VM_STARTS_AT_ONCE = 2;

/** How long to wait before the next start after `failures` failures in a row (1 or more). */
export function restartDelayMs(failures: number): number {
  if (failures <= 0) return 0;
  const doublings = Math.min(failures - 1, 16);
  return Math.min(RESTART_BACKOFF_FIRST_MS * 2 ** doublings, RESTART_BACKOFF_LONGEST_MS);
}

/** True once a VM failed often enough in a row to be listed Error. */
export function inCrashLoop(failures: number): boolean {
  return failures >= CRASH_LOOP_FAILURES;
}

/** True when a VM started at `startedAtMs` has run long enough for its failures to be forgotten. */
export function ranSteadily(startedAtMs: number, nowMs: number): boolean {
  return nowMs - startedAtMs >= STEADY_RUN_MS;
}
