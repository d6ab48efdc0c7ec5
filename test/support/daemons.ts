import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '../..');
export const FLEET_MAIN = join(ROOT, 'dist/apps/fleet/apps/fleet/src/main.js');
export const VM_HOST_MAIN = join(ROOT, 'dist/apps/vm-host/apps/vm-host/src/main.js');
export const FLEET_URL = 'http://127.0.0.1:9203';

const running = new Set<Daemon>();

// Whatever happens to the test run, no daemon outlives it.
process.on('exit', () => {
  for (const daemon of running) daemon.process.kill('SIGKILL');
});

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A built daemon running as a real process, its output kept for assertions. */
export class Daemon {
  readonly process: ChildProcess;
  readonly startedAt = Date.now();
  output = '';
  private readonly exited: Promise<Exit>;
  private watchers: Array<() => void> = [];

  constructor(
    main: string,
    env: NodeJS.ProcessEnv,
    args: string[] = [],
    nodeArgs: string[] = [],
    /** Run inside this network namespace (ip netns exec replaces itself: same pid, same signals). */
    netns?: string,
  ) {
    if (!existsSync(main)) throw new Error(`${main} is missing: run \`npm run build\` first`);
    const command = [process.execPath, ...shebangNodeOptions(main), ...nodeArgs, main, ...args];
    const [file, ...argv] = netns ? ['ip', 'netns', 'exec', netns, ...command] : command;
    this.process = spawn(file, argv, {
      env: { PATH: process.env.PATH, NO_COLOR: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(this);
    const collect = (chunk: Buffer): void => {
      this.output += chunk.toString('utf8');
      for (const watcher of this.watchers) watcher();
    };
    this.process.stdout!.on('data', collect);
    this.process.stderr!.on('data', collect);
    this.exited = new Promise((resolve) => {
      this.process.on('exit', (code, signal) => {
        running.delete(this);
        for (const watcher of this.watchers) watcher();
        resolve({ code, signal });
      });
    });
  }

  get alive(): boolean {
    return this.process.exitCode === null && this.process.signalCode === null;
  }

  /** Resolves when the output matches; rejects with the output so far on timeout or exit. */
  waitForOutput(pattern: RegExp, timeoutMs = 10_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => done(new Error(`timed out waiting for ${pattern}`)),
        timeoutMs,
      );
      const check = (): void => {
        if (pattern.test(this.output)) done();
        else if (!this.alive) done(new Error(`exited before printing ${pattern}`));
      };
      const done = (error?: Error): void => {
        clearTimeout(timer);
        this.watchers = this.watchers.filter((watcher) => watcher !== check);
        if (error) reject(new Error(`${error.message}; output:\n${this.output}`));
        else resolve();
      };
      this.watchers.push(check);
      check();
    });
  }

  waitForExit(timeoutMs = 10_000): Promise<Exit> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`still running after ${timeoutMs} ms; output:\n${this.output}`)),
        timeoutMs,
      );
      void this.exited.then((exit) => {
        clearTimeout(timer);
        resolve(exit);
      });
    });
  }

  /** SIGTERM, then SIGKILL if it has not exited after the grace period. */
  async stop(graceMs = 5_000): Promise<Exit> {
    if (!this.alive) return this.exited;
    this.process.kill('SIGTERM');
    const timer = setTimeout(() => this.process.kill('SIGKILL'), graceMs);
    const exit = await this.exited;
    clearTimeout(timer);
    return exit;
  }
}

/**
 * The Node options an entry point's `#!/usr/bin/env -S node ...` line gives it, so a test runs
 * the daemon as the installed command runs (the agent's memory depends on them).
 */
export function shebangNodeOptions(main: string): string[] {
  const firstLine = readFileSync(main, 'utf8').split('\n', 1)[0];
  const options = /^#!\/usr\/bin\/env -S node((?: +-\S+)*) *$/.exec(firstLine)?.[1];
  return options ? options.trim().split(/ +/) : [];
}

export function startFleetDaemon(env: NodeJS.ProcessEnv = {}, nodeArgs: string[] = []): Daemon {
  return new Daemon(FLEET_MAIN, env, [], nodeArgs);
}

export function startAgent(env: NodeJS.ProcessEnv, args: string[] = []): Daemon {
  return new Daemon(VM_HOST_MAIN, env, args);
}

export async function stopAllDaemons(): Promise<void> {
  await Promise.all([...running].map((daemon) => daemon.stop()));
}

/**
 * Polls `probe` until it returns a value (not undefined), for conditions only visible over
 * HTTP. Rejects with `what` after the timeout.
 */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

export interface ListedNode {
  node_id: string;
  hostname: string;
  wg_ip: string;
  ram_available_mb: number;
  vm_count: number;
  kvm_available: boolean;
  reserved: boolean;
  last_heartbeat: string;
}

export async function getJson<T>(path: string): Promise<T> {
  const response = await fetch(`${FLEET_URL}${path}`);
  if (!response.ok) throw new Error(`GET ${path} answered ${response.status}`);
  return (await response.json()) as T;
}

export async function listedNodes(): Promise<ListedNode[]> {
  return getJson<ListedNode[]>('/v1/nodes');
}

/** Real time passing: only for the one test that proves the 30 s drop with real processes. */
export function untilTime(epochMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, epochMs - Date.now())));
}
