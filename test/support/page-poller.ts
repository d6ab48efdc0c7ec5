/** One GET's outcome: when it started (Date.now()), and whether the page answered. */
export interface PageTry {
  atMs: number;
  ok: boolean;
  /** The failure's code (ECONNREFUSED, a timeout, a wrong body), for the report. */
  why?: string;
}

/** What a poller saw over its whole run. */
export interface PageFigures {
  tries: number;
  failed: number;
  /** The longest time from one answered GET's start to the next answered one's (ms). */
  longestGapMs: number;
  /** The failures' codes, each with how often. */
  failures: Record<string, number>;
}

/**
 * GETs `url` every `everyMs` (each with its own connection: the guest's server closes it, and
 * a timeout of `timeoutMs`) until `stop()`, as an office's browser reloading a page would;
 * an answer counts when its body contains `expected`.
 */
export class PagePoller {
  readonly tries: PageTry[] = [];
  private stopped = false;
  private readonly done: Promise<void>;

  constructor(
    private readonly url: string,
    private readonly expected: string,
    private readonly everyMs = 150,
    private readonly timeoutMs = 1_000,
  ) {
    this.done = this.run();
  }

  /** Ends the polling once the GET under way ends; the figures of the whole run. */
  async stop(): Promise<PageFigures> {
    this.stopped = true;
    await this.done;
    return this.figures();
  }

  /** Whether a GET answered since `sinceMs` (Date.now()). */
  answeredSince(sinceMs: number): boolean {
    return this.tries.some((one) => one.ok && one.atMs >= sinceMs);
  }

  /** From the first answered GET on (those before: the server still starting). */
  figures(): PageFigures {
    let longestGapMs = 0;
    let lastOk: number | undefined;
    const failures: Record<string, number> = {};
    const first = this.tries.findIndex((one) => one.ok);
    const tries = first < 0 ? this.tries : this.tries.slice(first);
    for (const one of tries) {
      if (!one.ok) {
        const why = one.why ?? 'failed';
        failures[why] = (failures[why] ?? 0) + 1;
        continue;
      }
      if (lastOk !== undefined) longestGapMs = Math.max(longestGapMs, one.atMs - lastOk);
      lastOk = one.atMs;
    }
    return {
      tries: tries.length,
      failed: tries.filter((one) => !one.ok).length,
      longestGapMs,
      failures,
    };
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const atMs = Date.now();
      this.tries.push({ atMs, ...(await this.once()) });
      const wait = atMs + this.everyMs - Date.now();
      // The poll's own pace (an office reloading a page), not a wait for an event.
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  private async once(): Promise<{ ok: boolean; why?: string }> {
    try {
      const response = await fetch(this.url, {
        signal: AbortSignal.timeout(this.timeoutMs),
        headers: { connection: 'close' },
      });
      const body = await response.text();
      return body.includes(this.expected) ? { ok: true } : { ok: false, why: 'wrong answer' };
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause;
      return { ok: false, why: cause?.code ?? (error as Error).name };
    }
  }
}
