import { performance } from 'node:perf_hooks';

/**
 * The longest time the event loop went without running a 1 ms timer: how long a request
 * arriving then would have waited. (monitorEventLoopDelay did not see a 50 ms synchronous
 * block on Node 20 here, so the bench measures the gap itself.)
 */
export class LoopStallMeter {
  private last = performance.now();
  private longest = 0;
  private readonly timer = setInterval(() => {
    const now = performance.now();
    this.longest = Math.max(this.longest, now - this.last);
    this.last = now;
  }, 1);

  constructor() {
    this.timer.unref();
  }

  /** The longest gap since the last reset, in ms. */
  maxMs(): number {
    return Math.max(this.longest, performance.now() - this.last);
  }

  reset(): void {
    this.longest = 0;
    this.last = performance.now();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
