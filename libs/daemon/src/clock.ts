/**
 * The time source of both daemons, injected so that staleness and ordering are tested by
 * moving a clock instead of waiting.
 *
 * Two readings, because a wall clock steps (NTP, `date -s`, a VM resumed): `now()` is what
 * durations are measured on (liveness, deadlines, backoff), `wallNow()` what is shown or
 * stamped (RFC 3339 fields). A clock with one time line (Redis TIME, the agent's) gives the
 * same for both.
 */
export abstract class Clock {
  /** Milliseconds since the epoch, on the time line durations and deadlines are measured on. */
  abstract now(): number;

  /** Milliseconds since the epoch as the wall clock reads them: what is shown or stamped. */
  wallNow(): number {
    return this.now();
  }
}

/** The machine's wall clock for both readings. */
export class SystemClock extends Clock {
  now(): number {
    return Date.now();
  }
}

/**
 * `now()` on the monotonic clock (performance.now(), which NTP may slew but nothing steps),
 * anchored to the wall clock once, when built; `wallNow()` is the wall clock. A wall clock
 * stepped back an hour then neither keeps a silent node live for an hour more nor, stepped
 * forward, drops every node at once: durations are what really elapsed, while what is shown
 * stays wall time. The sources are injectable for tests only.
 */
export class MonotonicClock extends Clock {
  private readonly offsetMs: number;

  constructor(
    // Looked up at each call, not bound once: jest's fake timers replace both globals.
    private readonly wall: () => number = () => Date.now(),
    private readonly monotonic: () => number = () => performance.now(),
  ) {
    super();
    this.offsetMs = wall() - monotonic();
  }

  /** Whole milliseconds, as Date.now() gives them. */
  now(): number {
    return Math.floor(this.offsetMs + this.monotonic());
  }

  override wallNow(): number {
    return this.wall();
  }
}
