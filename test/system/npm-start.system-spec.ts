import { ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  FLEET_MAIN,
  FLEET_URL,
  ListedNode,
  VM_HOST_MAIN,
  eventually,
  getJson,
  listedNodes,
} from '../support/daemons';
import { guestImageBuildCommand, guestImagePath } from '../support/guest-image';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp } from '../support/guest-ssh';
import { killQemusUnder, liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

const ROOT = join(__dirname, '../..');
const execFileAsync = promisify(execFile);
/** The CLI `npx ppn-fleet` runs in this checkout (package.json's bin). */
const CLI_MAIN = join(ROOT, 'dist/apps/ppn-fleet/apps/ppn-fleet/src/main.js');
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

/**
 * The README's first VM ("Your first VM, with SSH"): the arguments of its
 * `npx ppn-fleet vm create ...` line, and the type and tenant they give.
 */
function readmeFirstVm(): { args: string[]; vm_type: string; tenant_id: string } {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const [, line] = /^npx ppn-fleet (vm create [^#\n]*?)\s*(?:#.*)?$/m.exec(readme) ?? [];
  if (!line) throw new Error('README.md shows no `npx ppn-fleet vm create ...` line');
  const args = line.split(/\s+/);
  const option = (name: string): string => {
    const value = args[args.indexOf(name) + 1];
    if (!args.includes(name) || value === undefined)
      throw new Error(`README's create has no ${name}`);
    return value;
  };
  return { args, vm_type: option('--type'), tenant_id: option('--tenant') };
}

interface ListedVm {
  vm_id: string;
  state: string;
  host_ports: Array<{ host_port: number; guest_port: number }>;
}

describe('npm start', () => {
  let npm: ChildProcess | undefined;
  /** The running test's scratch folder: its TMPDIR and VM disks. */
  let folder: string | undefined;

  afterEach(() => {
    // A failed test leaves nothing running: whatever npm started, npm, then the VMs' QEMU
    // processes (daemonized, so not npm's descendants).
    if (npm?.pid) {
      for (const pid of descendantsOf(npm.pid)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
      npm.kill('SIGKILL');
    }
    npm = undefined;
    if (folder) killQemusUnder(folder);
    folder = undefined;
  });

  it('builds, then runs what start:built runs, exec-ed so npm signals deploy/dev.ts itself', () => {
    expect(SCRIPTS.start).toBe(`npm run build && ${SCRIPTS['start:built']}`);
    expect(SCRIPTS['start:built']).toMatch(/^exec ts-node .*deploy\/dev\.ts$/);
  });

  /**
   * Runs `npm run start:built` (with `env` on top) and resolves once the local node enrolled, with
   * both daemons' pids and what it said.
   */
  async function startedWithNodeEnrolled(env: NodeJS.ProcessEnv = {}): Promise<{
    started: ChildProcess;
    exited: Promise<unknown>;
    daemons: number[];
    output: string;
  }> {
    // Its own TMPDIR: what npm and ts-node cache there goes with the scratch folder.
    folder = scratchFolder('npm-start-');
    const started = spawn('npm', ['run', 'start:built'], {
      cwd: ROOT,
      env: {
        ...process.env,
        TMPDIR: folder,
        VM_DISK_DIR: join(folder, 'vms'),
        NO_COLOR: '1',
        ...env,
      },
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
    return { started, exited, daemons, output };
  }

  async function expectStopped(daemons: number[]): Promise<void> {
    // The ports are waited for too: a daemon's main thread shows as a zombie while its other
    // threads are still exiting, and those hold its sockets until the last of them is gone.
    await eventually(
      `both daemons (${daemons.join(', ')}) gone, :9203 and :9204 free`,
      async () =>
        daemons.every(isGone) && (await portIsFree(9203)) && (await portIsFree(9204))
          ? true
          : undefined,
      15_000,
    );
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
    // Without VM_DISK_DIR: the disks go to a folder of this checkout's (and user's) own, named.
    const { started, exited, daemons, output } = await startedWithNodeEnrolled({
      VM_DISK_DIR: undefined,
    });
    const own = createHash('sha256')
      .update(`${process.getuid!()}:${ROOT}`)
      .digest('hex')
      .slice(0, 12);
    const diskDir = join(folder!, `ppn-fleet-dev-${own}`, 'vm-disks');
    expect(output).toContain(
      `  VM disks:    ${diskDir}, this checkout's own (VM_DISK_DIR to choose)\n`,
    );
    expect(existsSync(diskDir)).toBe(true);
    const [dev] = descendantsOf(started.pid!).filter((pid) =>
      commandLineOf(pid).includes('deploy/dev.ts'),
    );
    expect(dev).toBeDefined();
    process.kill(dev, 'SIGKILL');
    await exited;
    await expectStopped(daemons);
  }, 90_000);

  it(
    "with the guest image and ~/.ssh/id_ed25519.pub, the README's first VM (made by its ppn-fleet command) answers SSH on its host_port, and its QEMU ends once deleted",
    async () => {
      const image = guestImagePath();
      if (!existsSync(image)) {
        throw new Error(
          `no guest image ${image}: npm run test:system builds it as root, or: ${guestImageBuildCommand()}`,
        );
      }
      // A HOME of the test's own, with the key a newcomer makes (ssh-keygen -t ed25519).
      const home = scratchFolder('npm-start-home-');
      mkdirSync(join(home, '.ssh'), { mode: 0o700 });
      const key = join(home, '.ssh', 'id_ed25519');
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'npm-start', '-f', key]);
      const pubkey = readFileSync(`${key}.pub`, 'utf8').trim();
      const { started, exited, daemons, output } = await startedWithNodeEnrolled({
        HOME: home,
        VM_BASE_IMAGE: image,
        // dev.ts finds the key in HOME, not here.
        VM_SSH_PUBKEY: undefined,
        // A fresh HOME would have npm look for a newer npm, and there is no network in here.
        npm_config_update_notifier: 'false',
      });
      expect(output).toContain(`  Base image:  ${image} (VM_BASE_IMAGE)\n`);
      expect(output).toContain(`  SSH key:     ${key}.pub\n`);

      // The README's command, run as npx runs it: this checkout's built CLI, on the default endpoint.
      const demo = readmeFirstVm();
      const createdAt = Date.now();
      // Asynchronously: npm start's output keeps being read meanwhile.
      const created = await execFileAsync(process.execPath, [CLI_MAIN, ...demo.args, '--json'], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, HOME: home, VM_FLEET_ENDPOINT: undefined },
        timeout: 60_000,
      });
      const vm = JSON.parse(created.stdout) as ListedVm & { vm_id: string; node_id: string };
      expect(vm.state).toBe('Running');
      const { vm_id: vmId, node_id: nodeId } = vm;
      const listed = await getJson<ListedVm[]>(`/v1/vms?tenant_id=${demo.tenant_id}`);
      expect(listed.map((each) => each.vm_id)).toEqual([vmId]);
      const sshPort = vm.host_ports.find(({ guest_port }) => guest_port === 22)!.host_port;
      const node = await getJson<ListedNode>(`/v1/nodes/${nodeId}`);
      expect(node.wg_ip).toBe('127.0.0.1');

      const answer = await sshOnceUp(
        key,
        node.wg_ip,
        sshPort,
        'hostname; cat ~/.ssh/authorized_keys',
        {
          since: createdAt,
          deadlineMs: GUEST_SSH_DEADLINE_MS,
          serialLog: join(folder!, 'vms', 'run', vmId, 'serial.log'),
        },
      );
      console.log(
        `npm start: ${vmId} answered SSH ${((Date.now() - createdAt) / 1000).toFixed(1)} s after the create`,
      );
      const [hostname, ...authorizedKeys] = answer.trim().split('\n');
      expect(hostname).toBe(`${demo.vm_type}-${vmId.slice(-8)}`);
      expect(authorizedKeys).toEqual([pubkey]);

      const qemus = () =>
        liveQemusUnder(folder!).filter(({ args }) => args.includes(`guest=${vmId}`));
      expect(qemus()).toHaveLength(1);
      expect((await fetch(`${FLEET_URL}/v1/vms/${vmId}`, { method: 'DELETE' })).status).toBe(204);
      await eventually(
        `${vmId}'s QEMU process gone`,
        () => Promise.resolve(qemus().length === 0 ? true : undefined),
        15_000,
        200,
      );

      started.kill('SIGTERM');
      await exited;
      await expectStopped(daemons);
    },
    45_000 + GUEST_SSH_DEADLINE_MS + 60_000,
  );
});
