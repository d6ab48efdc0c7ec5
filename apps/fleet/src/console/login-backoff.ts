import { Injectable } from '@nestjs/common';
import { Clock } from '@app/daemon';

/** Wrong tokens a client address may send in a row before it has to wait. */
export const LOGIN_FREE_FAILURES = 5;
/** The first wait after those, doubled at each further failure, up to LOGIN_MAX_WAIT_MS. */
export const LOGIN_FIRST_WAIT_MS = 1_000;
export const LOGIN_MAX_WAIT_MS = 5 * 60_000;
/** An address's failures are forgotten after this long without one. */
const FORGET_AFTER_MS = 15 * 60_000;
/** The most addresses followed at once (the oldest failure is forgotten first). */
const MAX_ADDRESSES = 10_000;

interface Failures {
  count: number;
  lastMs: number;
}

/**
 * The console login's back-off per client address (the connection's, never a header a client
 * writes): after LOGIN_FREE_FAILURES wrong tokens in a row, the next try is taken only after a
 * wait that doubles with each further failure; a right token clears the address. Time is the
 * injected Clock's monotonic one.
 */
@Injectable()
export class LoginBackoff {
  /** By address, least recently failed first. */
  private readonly failures = new Map<string, Failures>();

  constructor(private readonly clock: Clock) {}

  /** How long (ms) `address` must still wait before a login is looked at; 0: not at all. */
  waitMs(address: string): number {
    const failures = this.failures.get(address);
    if (failures === undefined || failures.count < LOGIN_FREE_FAILURES) return 0;
    const wait = Math.min(
      LOGIN_FIRST_WAIT_MS * 2 ** (failures.count - LOGIN_FREE_FAILURES),
      LOGIN_MAX_WAIT_MS,
    );
    return Math.max(0, failures.lastMs + wait - this.clock.now());
  }

  failed(address: string): void {
    const nowMs = this.clock.now();
    for (const [oldAddress, old] of this.failures) {
      if (nowMs - old.lastMs < FORGET_AFTER_MS && this.failures.size < MAX_ADDRESSES) break;
      this.failures.delete(oldAddress);
    }
    const count = (this.failures.get(address)?.count ?? 0) + 1;
    this.failures.delete(address);
    this.failures.set(address, { count, lastMs: nowMs });
  }

  succeeded(address: string): void {
    this.failures.delete(address);
  }
}
