/** One of the CLI's output streams: process.stdout and process.stderr fit. */
export interface OutputStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

/**
 * Everything the CLI takes from its process, as one provider: its environment, its output
 * streams and fetch, so that tests run it in-process with their own.
 */
export abstract class CliIo {
  abstract readonly env: NodeJS.ProcessEnv;
  abstract readonly stdout: OutputStream;
  abstract readonly stderr: OutputStream;
  abstract readonly fetch: typeof fetch;
  /** Waits `ms` (the --wait loop's pause); tests may skip the wait. */
  abstract sleep(ms: number): Promise<void>;
  /** A monotonic time in ms, for --wait's timeout. */
  abstract now(): number;
  /** The wall clock in ms, to show how far off a time the API gave is; tests fix it. */
  wallNow(): number {
    return Date.now();
  }
}

/** The real process's. */
export class ProcessIo extends CliIo {
  readonly env = process.env;
  readonly stdout = process.stdout;
  readonly stderr = process.stderr;
  readonly fetch = globalThis.fetch;
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
  now(): number {
    return performance.now();
  }
}
