import { mkdtempSync, readFileSync, readdirSync, rmSync, rmdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

/**
 * One jest run's own temporary folder, /tmp/ppn-test-XXXXXX: TMPDIR points at it for the whole
 * run, so every temporary file of the specs, and of the processes they start, is the run's own.
 * Two runs on one machine never touch each other's files or processes, and the run's end knows
 * what to clean, whatever a spec forgot. The jest global setup and teardown of every tier.
 */
export const RUN_FOLDER_VARIABLE = 'PPN_TEST_RUN_DIR';

interface TestRun {
  folder: string;
  previousTmpdir: string | undefined;
}

// Jest's global setup and teardown share this global (one call per project of the run).
const state = globalThis as { ppnTestRun?: TestRun };

export function startTestRun(): void {
  if (state.ppnTestRun) return;
  const folder = mkdtempSync(join(tmpdir(), 'ppn-test-'));
  state.ppnTestRun = { folder, previousTmpdir: process.env.TMPDIR };
  process.env[RUN_FOLDER_VARIABLE] = folder;
  process.env.TMPDIR = folder;
}

/**
 * Kills every live process of the run: a QEMU whose command line names a file of the run's
 * folder, or any process started with TMPDIR in it (daemons, redis-server, npm); then removes
 * the folder. Says what a spec left behind, so it can be fixed there.
 */
export async function endTestRun(): Promise<void> {
  const run = state.ppnTestRun;
  if (!run) return;
  state.ppnTestRun = undefined;
  const leftovers = processesOfRun(run.folder);
  for (const { pid } of leftovers) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  await untilGone(leftovers.map(({ pid }) => pid));
  removeGuestCgroups();
  const folders = readdirSync(run.folder);
  rmSync(run.folder, { recursive: true, force: true });
  if (run.previousTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = run.previousTmpdir;
  delete process.env[RUN_FOLDER_VARIABLE];
  if (leftovers.length > 0 || folders.length > 0) {
    const what = [
      ...leftovers.map(({ pid, args }) => `process ${pid} (${basename(args[0] ?? '?')})`),
      ...folders.map((name) => `folder ${join(run.folder, name)}`),
    ];
    console.warn(`test run: left behind by a spec, now removed: ${what.join(', ')}`);
  }
}

/**
 * The cgroups agents started as root make for their VMs' QEMU (`ppn-vm-guests.<node_id>`): an
 * agent removes its own when it stops with no guest left, but a spec stops agents before their
 * VMs. cgroups are the machine's, not the run's namespace's; only empty ones can go, so one in use
 * by a run beside this one stays.
 */
function removeGuestCgroups(): void {
  for (const root of ['/sys/fs/cgroup/unified', '/sys/fs/cgroup']) {
    let names: string[] = [];
    try {
      names = readdirSync(root).filter((name) => name.startsWith('ppn-vm-guests.'));
    } catch {
      continue;
    }
    for (const name of names) {
      try {
        rmdirSync(join(root, name));
      } catch {
        // in use, or not ours to remove
      }
    }
  }
}

export interface RunProcess {
  pid: number;
  args: string[];
}

/** Live processes (zombies do not count) of the run whose folder is `folder`. */
export function processesOfRun(folder: string): RunProcess[] {
  const found: RunProcess[] = [];
  const marker = `TMPDIR=${folder}`;
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))) continue;
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      const qemuOfRun =
        basename(args[0] ?? '').startsWith('qemu-system-') &&
        args.some((arg) => arg.includes(folder));
      const startedByRun = readFileSync(`/proc/${pid}/environ`, 'utf8')
        .split('\0')
        .includes(marker);
      // jest's own workers (when not --runInBand) start after the setup, so they carry TMPDIR too.
      if ((qemuOfRun || startedByRun) && !args.some((arg) => arg.includes('jest-worker'))) {
        found.push({ pid, args });
      }
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

async function untilGone(pids: number[], timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const alive = (pid: number): boolean => {
    try {
      return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return false;
    }
  };
  while (pids.some(alive) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
