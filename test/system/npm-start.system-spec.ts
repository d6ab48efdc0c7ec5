import { ChildProcess, spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { FLEET_MAIN, VM_HOST_MAIN, eventually, listedNodes } from '../support/daemons';
import { scratchFolder } from '../support/scratch-folders';

const ROOT = join(__dirname, '../..');
const SCRIPTS = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  }
).scripts;

interface ProcessEntry {
  ppid: number;
  state: string;
}

/** This (PID namespace's) machine's processes, from /proc/<pid>/stat. */
function processTable(): Map<number, ProcessEntry> {
  const table = new Map<number, ProcessEntry>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // After the command name, which may hold spaces and parentheses: state, ppid, ...
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(name), { ppid: Number(ppid), state });
    } catch {
      // gone meanwhile
    }
  }
  return table;
}

function descendantsOf(pid: number): number[] {
  const table = processTable();
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const [child, { ppid }] of table) {
      if (ppid === parent) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}

function commandLineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

/** Exited (a zombie counts: it runs nothing and holds no port). */
function isGone(pid: number): boolean {
  const entry = processTable().get(pid);
  return entry === undefined || entry.state === 'Z';
}

/** Whether this machine lets a new server listen on the port (on every address, as the controller). */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, () => server.close(() => resolve(true)));
  });
}

describe('npm start', () => {
  let npm: ChildProcess | undefined;

  afterEach(() => {
    // A failed test leaves nothing running: whatever npm started, then npm.
    if (!npm?.pid) return;
    for (const pid of descendantsOf(npm.pid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    npm.kill('SIGKILL');
    npm = undefined;
  });

  it('builds, then runs what start:built runs, exec-ed so npm signals deploy/dev.ts itself', () => {
    expect(SCRIPTS.start).toBe(`npm run build && ${SCRIPTS['start:built']}`);
    expect(SCRIPTS['start:built']).toMatch(/^exec ts-node .*deploy\/dev\.ts$/);
  });

  /** Runs `npm run start:built` and resolves once the local node enrolled, with both daemons' pids. */
  async function startedWithNodeEnrolled(): Promise<{
    started: ChildProcess;
    exited: Promise<unknown>;
    daemons: number[];
  }> {
    // Its own TMPDIR: what npm and ts-node cache there goes with the scratch folder.
    const folder = scratchFolder('npm-start-');
    const started = spawn('npm', ['run', 'start:built'], {
      cwd: ROOT,
      env: { ...process.env, TMPDIR: folder, VM_DISK_DIR: join(folder, 'vms'), NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    npm = started;
    let output = '';
    started.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    started.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise((resolve) => started.once('exit', resolve));
    await eventually(
      'the local node enrolled',
      async () => ((await listedNodes()).length === 1 ? true : undefined),
      45_000,
      200,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; npm start said:\n${output}`);
    });
    // It says what the local agent's VMs boot: the Debian image, VM_BASE_IMAGE, or blank disks.
    expect(output).toMatch(/^ {2}Base image: {2}(\/|none, blank disks)/m);
    const daemons = descendantsOf(started.pid!).filter((pid) =>
      [FLEET_MAIN, VM_HOST_MAIN].some((main) => commandLineOf(pid).includes(main)),
    );
    expect(daemons).toHaveLength(2);
    return { started, exited, daemons };
  }

  async function expectStopped(daemons: number[]): Promise<void> {
    await eventually(
      `both daemons (${daemons.join(', ')}) gone`,
      () => Promise.resolve(daemons.every(isGone) ? true : undefined),
      15_000,
    );
    expect(await portIsFree(9203)).toBe(true);
    expect(await portIsFree(9204)).toBe(true);
  }

  it.each(['SIGTERM', 'SIGINT', 'SIGHUP'] as const)(
    'stops both daemons and frees :9203 when the npm process gets %s',
    async (signal) => {
      const { started, exited, daemons } = await startedWithNodeEnrolled();
      started.kill(signal);
      await exited;
      await expectStopped(daemons);
    },
    90_000,
  );

  it('stops both daemons when deploy/dev.ts itself is killed (SIGKILL, no clean-up)', async () => {
    const { started, exited, daemons } = await startedWithNodeEnrolled();
    const [dev] = descendantsOf(started.pid!).filter((pid) =>
      commandLineOf(pid).includes('deploy/dev.ts'),
    );
    expect(dev).toBeDefined();
    process.kill(dev, 'SIGKILL');
    await exited;
    await expectStopped(daemons);
  }, 90_000);
});
