/**
 * The time source of both daemons, injected so that staleness and ordering are tested by
 * moving a clock instead of waiting.
 */
export abstract class Clock {
  /** Milliseconds since the epoch. */
  abstract now(): number;
}

export class SystemClock extends Clock {
  now(): number {
    return Date.now();
  }
}
