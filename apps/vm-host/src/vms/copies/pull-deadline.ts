/** The longest a pull may take when its read grant says no expiry: a read grant's life. */
export const MAX_PULL_MS = 30 * 60_000;

/**
 * When a pull must be over (wall-clock ms): the read grant's expiry (its payload's `exp`, read
 * unverified: it only shortens this node's own wait; the holder checks the grant), a deadline
 * the caller gives, and at most MAX_PULL_MS from `nowMs`, whichever comes first.
 */
export function pullDeadline(grant: string, nowMs: number, requestedMs?: number): number {
  let expiresMs: number | undefined;
  try {
    const payload = JSON.parse(
      Buffer.from(grant.slice(0, grant.indexOf('.')), 'base64url').toString('utf8'),
    ) as { exp?: unknown };
    if (typeof payload.exp === 'number' && Number.isFinite(payload.exp)) expiresMs = payload.exp;
  } catch {
    expiresMs = undefined;
  }
  return Math.min(nowMs + MAX_PULL_MS, expiresMs ?? Infinity, requestedMs ?? Infinity);
}

/** An AbortSignal that fires at `deadlineMs` (wall clock); dispose() once the work is over. */
export function abortAt(
  deadlineMs: number,
  nowMs: number,
): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new Error(`its deadline ${new Date(deadlineMs).toISOString()} passed`)),
    Math.max(0, deadlineMs - nowMs),
  );
  timer.unref();
  return { signal: controller.signal, dispose: () => clearTimeout(timer) };
}
