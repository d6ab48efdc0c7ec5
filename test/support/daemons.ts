import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scratchFolder } from './scratch-folders';

const ROOT = join(__dirname, '../..');
export const FLEET_MAIN = join(ROOT, 'dist/apps/fleet/apps/fleet/src/main.js');
export const VM_HOST_MAIN = join(ROOT, 'dist/apps/vm-host/apps/vm-host/src/main.js');
export const FLEET_URL = 'http://127.0.0.1:9203';

/**
 * How long a daemon may take to start, or to say what a test waits for: generous, since a
 * loaded 2-core machine boots Nest slowly and start-up time is not what these tests measure.
 */
export const OUTPUT_TIMEOUT_MS = 20_000;

/** Every daemon started and not yet exited: stopAllDaemons() ends them after each spec file. */
const running = new Set<Daemon>();

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A built daemon running as a real process, its output kept for assertions. */
export class Daemon {
  readonly process: ChildProcess;
  readonly startedAt = Date.now();
  output = '';
  /** When each piece of the output arrived: its end offset in `output` and the time. */
  private readonly arrivals: Array<{ end: number; at: number }> = [];
  private readonly exited: Promise<Exit>;
  private watchers: Array<() => void> = [];

  constructor(
    main: string,
    env: NodeJS.ProcessEnv,
    args: string[] = [],
    nodeArgs: string[] = [],
    /** Run inside this network namespace (ip netns exec replaces itself: same pid, same signals). */
    netns?: string,
    /** Commands that run the daemon as their last arguments, replacing themselves (e.g. setpriv). */
    launcher: string[] = [],
  ) {
    if (!existsSync(main)) throw new Error(`${main} is missing: run \`npm run build\` first`);
    const command = [
      ...launcher,
      process.execPath,
      ...shebangNodeOptions(main),
      ...nodeArgs,
      main,
      ...args,
    ];
    const [file, ...argv] = netns ? ['ip', 'netns', 'exec', netns, ...command] : command;
    this.process = spawn(file, argv, {
      // TMPDIR: its temporary files are the test run's, and the run's end finds it (test-run.ts).
      env: { PATH: process.env.PATH, TMPDIR: tmpdir(), NO_COLOR: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(this);
    const collect = (chunk: Buffer): void => {
      this.output += chunk.toString('utf8');
      this.arrivals.push({ end: this.output.length, at: Date.now() });
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

  /**
   * Resolves with the time the first match of `pattern` arrived: when the daemon said it, not
   * when a test looked. Rejects with the output so far on timeout or exit.
   */
  waitForOutput(pattern: RegExp, timeoutMs = OUTPUT_TIMEOUT_MS): Promise<number> {
    const matcher = new RegExp(pattern.source, pattern.flags.replace('g', ''));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => done(new Error(`timed out waiting for ${pattern}`)),
        timeoutMs,
      );
      const check = (): void => {
        const match = matcher.exec(this.output);
        if (match) done(undefined, match.index + match[0].length);
        else if (!this.alive) done(new Error(`exited before printing ${pattern}`));
      };
      const done = (error?: Error, matchEnd = 0): void => {
        clearTimeout(timer);
        this.watchers = this.watchers.filter((watcher) => watcher !== check);
        if (error) reject(new Error(`${error.message}; output:\n${this.output}`));
        else resolve(this.arrivals.find((arrival) => arrival.end >= matchEnd)!.at);
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

/** Starts the built controller and resolves once it listens on 9203. */
export async function listeningFleetDaemon(): Promise<Daemon> {
  const fleet = startFleetDaemon();
  await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
  return fleet;
}

/**
 * A built agent. Without a VM_DISK_DIR of the test's, it gets a scratch folder of its own, not
 * the default /var/lib/vm-fleet: a test leaves the machine as it found it. Without a VM_ACCEL
 * of the test's, it runs VMs under TCG: most tests boot a blank disk, which cannot show whether
 * KVM runs a guest (the agent would watch its first KVM VM for 30 s, KVM_PROBATION_MS) and
 * whose RAM is counted as under TCG. Tests booting the guest image run the product's default,
 * VM_ACCEL=auto, with its KVM attempt and fallback on hosts whose KVM fails. `netns`: run it in
 * that test host's network namespace (netns.ts), as a node of its own.
 */
export function startAgent(env: NodeJS.ProcessEnv, args: string[] = [], netns?: string): Daemon {
  const disks = 'VM_DISK_DIR' in env ? {} : { VM_DISK_DIR: scratchFolder('agent-disks-') };
  const accel = 'VM_ACCEL' in env ? {} : { VM_ACCEL: 'tcg' };
  return new Daemon(VM_HOST_MAIN, { ...disks, ...accel, ...env }, args, [], netns);
}

/** Resolves once the agent says its first heartbeat was delivered: the controller lists it. */
export async function enrolled(agent: Daemon): Promise<Daemon> {
  await agent.waitForOutput(/ enrolled: heartbeating to /);
  return agent;
}

export async function stopAllDaemons(): Promise<void> {
  await Promise.all([...running].map((daemon) => daemon.stop()));
}

/**
 * Polls `probe` until it returns a value (not undefined), for conditions only visible over
 * HTTP. The last probe starts at the deadline, never a poll later; then it rejects naming
 * `what`. A test that claims "within N ms" asserts on the time of the event itself (a receive
 * time, an output line's arrival), not on when this loop happened to look.
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
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, Math.min(everyMs, left)));
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

/**
 * Real time passing: only for the one test that proves the 30 s drop with real processes.
 * Resolves once Date.now() has reached `epochMs` (a timer may fire a little early).
 */
export async function untilTime(epochMs: number): Promise<void> {
  while (Date.now() < epochMs) {
    await new Promise((resolve) => setTimeout(resolve, epochMs - Date.now()));
  }
}
