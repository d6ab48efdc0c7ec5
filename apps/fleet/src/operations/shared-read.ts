import { Clock } from '@app/daemon';

/**
 * A read shared by every caller: those that come while it runs wait for the same answer, and
 * those that come within `minIntervalMs` of its start (or `busyFactor` times its duration, when
 * that is longer: a slow read is not started back to back) get that answer too. So however many
 * pages and clients poll, it runs at most once per interval. A read that failed is not kept: the
 * next caller starts another.
 */
export class SharedRead<T> {
  private current?: { startedMs: number; intervalMs: number; answer: Promise<T>; done: boolean };
  private last?: T;

  constructor(
    private readonly clock: Clock,
    private readonly minIntervalMs: number,
    private readonly busyFactor: number,
    private readonly read: () => Promise<T>,
  ) {}

  get(): Promise<T> {
    const nowMs = this.clock.now();
    const current = this.current;
    if (current && (!current.done || nowMs - current.startedMs < current.intervalMs)) {
      return current.answer;
    }
    const started = {
      startedMs: nowMs,
      intervalMs: this.minIntervalMs,
      answer: this.read(),
      done: false,
    };
    this.current = started;
    started.answer.then(
      (value) => {
        started.done = true;
        started.intervalMs = Math.max(
          this.minIntervalMs,
          this.busyFactor * (this.clock.now() - started.startedMs),
        );
        this.last = value;
      },
      () => {
        if (this.current === started) this.current = undefined;
      },
    );
    return started.answer;
  }

  /** The next caller starts a new read (one under way still answers those it has). */
  expire(): void {
    this.current = undefined;
  }

  /** The last answer read, if any: for a caller that amends it (an action's outcome). */
  latest(): T | undefined {
    return this.last;
  }
}

/**
 * At most `limit` calls at once; the others wait their turn in order. For the calls a listing
 * makes to every agent: a 1,000-node fleet is asked a few dozen at a time, never all at once,
 * so the heartbeats arriving meanwhile are not queued behind a thousand replies.
 */
export class CallLimit {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly limit: number) {}

  async run<T>(call: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await call();
    } finally {
      const next = this.waiting.shift();
      // The slot passes to the next caller as it is: `running` stays counted for it.
      if (next) next();
      else this.running--;
    }
  }
}
