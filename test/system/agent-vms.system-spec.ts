import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { Server, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { TCG_TRANSLATION_CACHE_MB } from '@app/fleet-domain';
import { Daemon, VM_HOST_MAIN, eventually, startAgent, stopAllDaemons } from '../support/daemons';
import { liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * The agent's VM API with real agents and real QEMU (TCG, a blank 64 MB base image): refusals
 * that explain themselves, committed RAM, idempotent spawns, no QEMU process lost whatever the
 * moment the agent is killed, a full VM_DISK_DIR, private files. The agents' API is called
 * directly, as the controller would; their heartbeats go to a listener that keeps them.
 */
jest.setTimeout(60_000);

const SPAWN_PORT = 9204;
// Short: a QMP socket path under it (crash-after-launch-before-pid-written/run/<vm>/qmp.sock)
// must stay within 107 bytes.
const workDir = scratchFolder('agent-');
const baseImage = join(workDir, 'base.qcow2');

interface AgentVm {
  vm_id: string;
  vm_type: string;
  state: string;
  accel?: string | null;
  ram_alloc_mb: number;
  vcpu_count: number;
  host_ports: Array<{ host_port: number }>;
  idempotency_key?: string;
}

interface Heartbeat {
  node_id: string;
  ram_total_mb: number;
  ram_used_mb: number;
  kvm_available: boolean;
  vms: AgentVm[];
}

/** The live QEMU processes of one VM, as /proc shows them. */
function qemuPidsOf(vmId: string): number[] {
  return liveQemusUnder(workDir)
    .filter(({ args }) => args.includes(`guest=${vmId}`))
    .map(({ pid }) => pid);
}

/** Stands in for the controller: answers every heartbeat 200 and keeps the last per node. */
class HeartbeatListener {
  readonly last = new Map<string, Heartbeat>();
  private server?: Server;

  async start(): Promise<string> {
    this.server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => {
        const beat = JSON.parse(body) as Heartbeat;
        this.last.set(beat.node_id, beat);
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The next heartbeat of the node after now that satisfies `check`. */
  async beat(nodeId: string, check: (beat: Heartbeat) => boolean = () => true) {
    this.last.delete(nodeId);
    return eventually(
      `a heartbeat of ${nodeId}`,
      () => {
        const beat = this.last.get(nodeId);
        return Promise.resolve(beat && check(beat) ? beat : undefined);
      },
      5_000,
    );
  }

  stop(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

const listener = new HeartbeatListener();
let fleetEndpoint: string;

function agentEnv(nodeId: string, wgIp: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    VM_FLEET_ENDPOINT: fleetEndpoint,
    VM_NODE_ID: nodeId,
    VM_WG_IP: wgIp,
    VM_HEARTBEAT_INTERVAL_S: '1',
    VM_DISK_DIR: join(workDir, nodeId),
    VM_BASE_IMAGE: baseImage,
    ...extra,
  };
}

async function startListeningAgent(env: NodeJS.ProcessEnv): Promise<Daemon> {
  const agent = startAgent(env);
  await agent.waitForOutput(new RegExp(`listening on ${env.VM_WG_IP}:${SPAWN_PORT}`));
  return agent;
}

interface Answer {
  status: number;
  body: AgentVm & { message: string };
}

async function spawnAt(
  wgIp: string,
  body: object,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await fetch(`http://${wgIp}:${SPAWN_PORT}/v1/spawn`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Answer['body'] };
}

async function vmsAt(wgIp: string): Promise<AgentVm[]> {
  const response = await fetch(`http://${wgIp}:${SPAWN_PORT}/v1/vms`);
  return (await response.json()) as AgentVm[];
}

async function deleteAt(wgIp: string, vmId: string): Promise<number> {
  return (await fetch(`http://${wgIp}:${SPAWN_PORT}/v1/vms/${vmId}`, { method: 'DELETE' })).status;
}

async function listedAs(wgIp: string, vmId: string, state: string): Promise<AgentVm> {
  return eventually(
    `${vmId} listed ${state}`,
    async () => (await vmsAt(wgIp)).find((vm) => vm.vm_id === vmId && vm.state === state),
    10_000,
  );
}

/** The agent-side header for a client key and a request, as the controller computes it. */
function spawnKey(clientKey: string, request: object): string {
  const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
  return `${sha256(clientKey)}.${sha256(JSON.stringify(request))}`;
}

function mode(path: string): string {
  return (statSync(path).mode & 0o777).toString(8);
}

const SMALL = { vm_type: 'safety', ram_mb: 64, vcpu_count: 1, prefer_kvm: false };

beforeAll(async () => {
  execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', baseImage, '64M']);
  fleetEndpoint = await listener.start();
});

afterAll(async () => {
  await stopAllDaemons();
  await listener.stop();
});

describe('refusals that explain themselves', () => {
  const wgIp = '127.0.0.21';
  let agent: Daemon;

  beforeAll(async () => {
    agent = await startListeningAgent(agentEnv('refusals', wgIp, { VM_VCPU_OVERCOMMIT: '1' }));
  });

  afterAll(() => agent.stop());

  it('refuses 1 TiB with a 422 naming ram_mb and the numbers, and vCPUs beyond the overcommit naming vcpu_count', async () => {
    const before = liveQemusUnder(workDir).length;
    const huge = await spawnAt(wgIp, { ...SMALL, ram_mb: 1_048_576 });
    expect(huge.status).toBe(422);
    expect(huge.body.message).toMatch(
      /^ram_mb: 1048576 MB does not fit on this node: \d+ MB committable of \d+ MB \(margin 512 MB\)$/,
    );
    const cores = cpus().length;
    const many = await spawnAt(wgIp, { ...SMALL, vcpu_count: cores + 1 });
    expect(many.status).toBe(422);
    expect(many.body.message).toBe(
      `vcpu_count: ${cores + 1} vCPUs do not fit on this node: ${cores} committable of ${cores} (${cores} cores x VM_VCPU_OVERCOMMIT 1)`,
    );
    expect(liveQemusUnder(workDir)).toHaveLength(before);
    expect(readdirSync(join(workDir, 'refusals', 'run'))).toEqual([]);
  });

  it('counts an idle VM with all the RAM it was given: what it leaves is all that is left', async () => {
    const probe = await spawnAt(wgIp, { ...SMALL, ram_mb: 1_048_576 });
    const committable = Number(/(\d+) MB committable/.exec(probe.body.message)?.[1]);
    // Slack for what other processes on this machine allocate meanwhile.
    const big = await spawnAt(wgIp, { ...SMALL, ram_mb: committable - 3_072 });
    expect(big.status).toBe(201);
    await listedAs(wgIp, big.body.vm_id, 'Running');

    const beat = await listener.beat('refusals', (body) =>
      body.vms.some((vm) => vm.vm_id === big.body.vm_id && vm.state === 'Running'),
    );
    // The guest touched almost none of its RAM, yet all of it counts.
    expect(beat.ram_used_mb).toBeGreaterThanOrEqual(committable - 3_072);

    const next = await spawnAt(wgIp, { ...SMALL, ram_mb: 4_096 });
    expect(next.status).toBe(422);
    expect(next.body.message).toMatch(/^ram_mb: 4096 MB does not fit on this node: \d+ MB/);
    expect(await deleteAt(wgIp, big.body.vm_id)).toBe(204);
    expect(qemuPidsOf(big.body.vm_id)).toEqual([]);
  });
});

describe('Idempotency-Key', () => {
  const wgIp = '127.0.0.22';
  const nodeId = 'keys';
  let agent: Daemon;

  beforeAll(async () => {
    agent = await startListeningAgent(agentEnv(nodeId, wgIp));
  });

  afterAll(() => agent.stop());

  it('refuses any other form of the header with a 400 naming it, making nothing', async () => {
    for (const header of ['retry-1', 'a'.repeat(129), `${'A'.repeat(64)}.${'b'.repeat(64)}`]) {
      const answer = await spawnAt(wgIp, SMALL, { 'Idempotency-Key': header });
      expect(answer.status).toBe(400);
      expect(answer.body.message).toContain('Idempotency-Key');
    }
    expect(readdirSync(join(workDir, nodeId, 'run'))).toEqual([]);
  });

  it('answers a retry 200 with the same VM, and concurrent retries make one VM and one QEMU process', async () => {
    const key = spawnKey('order-1', SMALL);
    const first = await spawnAt(wgIp, SMALL, { 'Idempotency-Key': key });
    expect(first.status).toBe(201);
    const again = await spawnAt(wgIp, SMALL, { 'Idempotency-Key': key });
    expect(again.status).toBe(200);
    expect(again.body.vm_id).toBe(first.body.vm_id);

    const concurrentKey = spawnKey('order-2', SMALL);
    const answers = await Promise.all(
      [1, 2, 3, 4].map(() => spawnAt(wgIp, SMALL, { 'Idempotency-Key': concurrentKey })),
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 200, 200, 201]);
    const vmId = answers[0].body.vm_id;
    expect(answers.every((answer) => answer.body.vm_id === vmId)).toBe(true);
    await listedAs(wgIp, vmId, 'Running');
    expect(qemuPidsOf(vmId)).toHaveLength(1);
    expect((await vmsAt(wgIp)).map((vm) => vm.vm_id).sort()).toEqual(
      [first.body.vm_id, vmId].sort(),
    );
  });

  it('refuses the same key with another request with a 422 naming Idempotency-Key', async () => {
    const other = { ...SMALL, ram_mb: 96 };
    const key = spawnKey('order-1', SMALL).split('.')[0] + '.' + spawnKey('x', other).split('.')[1];
    const answer = await spawnAt(wgIp, other, { 'Idempotency-Key': key });
    expect(answer.status).toBe(422);
    expect(answer.body.message).toMatch(/^Idempotency-Key was used for another request \(vm /);
    expect(await vmsAt(wgIp)).toHaveLength(2);
  });

  it('tells the controller the key of each VM in heartbeats, and nobody else', async () => {
    const beat = await listener.beat(nodeId, (body) => body.vms.length === 2);
    expect(beat.vms.map((vm) => vm.idempotency_key).sort()).toEqual(
      [spawnKey('order-1', SMALL), spawnKey('order-2', SMALL)].sort(),
    );
    for (const vm of await vmsAt(wgIp)) expect(vm).not.toHaveProperty('idempotency_key');
  });

  it('keeps the key across an agent restart', async () => {
    const key = spawnKey('order-1', SMALL);
    const vmId = (await spawnAt(wgIp, SMALL, { 'Idempotency-Key': key })).body.vm_id;
    agent.process.kill('SIGKILL');
    await agent.waitForExit();
    agent = await startListeningAgent(agentEnv(nodeId, wgIp));
    const again = await spawnAt(wgIp, SMALL, { 'Idempotency-Key': key });
    expect(again).toMatchObject({ status: 200, body: { vm_id: vmId } });
  });

  it('keeps VM files private: disks, seed ISOs, sidecars 0600, folders 0700', async () => {
    const [vm] = await vmsAt(wgIp);
    const diskDir = join(workDir, nodeId);
    const runDir = join(diskDir, 'run', vm.vm_id);
    for (const folder of ['disks', 'run', 'deleted', 'base', join('run', vm.vm_id)]) {
      expect([folder, mode(join(diskDir, folder))]).toEqual([folder, '700']);
    }
    for (const file of [
      join(diskDir, 'disks', `${vm.vm_id}.qcow2`),
      join(runDir, 'seed.iso'),
      join(runDir, 'vm.json'),
      join(runDir, 'qemu.pid'),
      join(runDir, 'serial.log'),
    ]) {
      expect([file, mode(file)]).toEqual([file, '600']);
    }
  });
});

describe('no QEMU process is lost, whatever the moment the agent is killed', () => {
  const wgIp = '127.0.0.23';

  // A failed case must not leave its agent holding the address of the next one.
  afterEach(() => stopAllDaemons());

  it.each([
    ['after-sidecar', 'Running', false],
    ['after-disk', 'Running', false],
    ['after-seed', 'Running', false],
    ['after-launch-before-pid-written', 'Running', true],
    ['after-pid-written', 'Running', true],
  ] as const)(
    'killed %s: restarted, it lists the VM %s; DELETE leaves no QEMU process',
    async (failpoint, state, answered) => {
      const nodeId = `crash-${failpoint}`;
      const doomed = await startListeningAgent(
        agentEnv(nodeId, wgIp, { VM_HOST_FAILPOINT: failpoint }),
      );
      const answer = await spawnAt(wgIp, SMALL).catch(() => undefined);
      expect(await doomed.waitForExit()).toEqual({ code: null, signal: 'SIGKILL' });
      expect(answer?.status).toBe(answered ? 201 : undefined);
      const [vmId] = readdirSync(join(workDir, nodeId, 'run'));
      if (answer) expect(answer.body.vm_id).toBe(vmId);
      expect(qemuPidsOf(vmId)).toHaveLength(answered ? 1 : 0);

      const agent = await startListeningAgent(agentEnv(nodeId, wgIp));
      const listed = await listedAs(wgIp, vmId, state);
      expect(listed.vm_id).toBe(vmId);
      if (answered) {
        // The process is adopted: its pid is in the sidecar, its SSH port reported.
        const sidecar = JSON.parse(
          readFileSync(join(workDir, nodeId, 'run', vmId, 'vm.json'), 'utf8'),
        ) as { driver: { pid: number } };
        expect(qemuPidsOf(vmId)).toEqual([sidecar.driver.pid]);
        expect(listed.host_ports).toHaveLength(1);
      }

      expect(await deleteAt(wgIp, vmId)).toBe(204);
      expect(qemuPidsOf(vmId)).toEqual([]);
      expect(existsSync(join(workDir, nodeId, 'run', vmId))).toBe(false);
      expect(await vmsAt(wgIp)).toEqual([]);
      expect((await agent.stop()).code).toBe(0);
    },
  );
});

describe('a create cut short by a power cut (agent and QEMU killed) is finished or rolled back', () => {
  const wgIp = '127.0.0.28';

  afterEach(() => stopAllDaemons());

  /** Kills the VM's QEMU processes (if any) as a power cut would, and waits until they are gone. */
  async function powerCut(vmId: string): Promise<void> {
    for (const pid of qemuPidsOf(vmId)) process.kill(pid, 'SIGKILL');
    await eventually(
      `no QEMU of ${vmId}`,
      () => Promise.resolve(qemuPidsOf(vmId).length === 0 || undefined),
      5_000,
    );
  }

  it.each([
    // Before the intent (the sidecar): nothing is listed; the retry makes the VM anew.
    ['before-sidecar', 201],
    ['after-sidecar', 200],
    ['after-disk', 200],
    ['after-seed', 200],
    ['after-launch-before-pid-written', 200],
  ] as const)(
    'killed %s: restarted, the VM runs (one VM, one QEMU); a retry with the key answers %s with it',
    async (failpoint, retried) => {
      const nodeId = `cut-${failpoint}`;
      const vmId = `vm-${createHash('sha256').update(failpoint).digest('hex').slice(0, 16)}`;
      const request = { ...SMALL, vm_id: vmId };
      const key = spawnKey(`order-${failpoint}`, request);
      const doomed = await startListeningAgent(
        agentEnv(nodeId, wgIp, { VM_HOST_FAILPOINT: failpoint }),
      );
      await spawnAt(wgIp, request, { 'Idempotency-Key': key }).catch(() => undefined);
      expect(await doomed.waitForExit()).toEqual({ code: null, signal: 'SIGKILL' });
      await powerCut(vmId);

      const agent = await startListeningAgent(agentEnv(nodeId, wgIp));
      const again = await spawnAt(wgIp, request, { 'Idempotency-Key': key });
      expect({ status: again.status, vm_id: again.body.vm_id }).toEqual({
        status: retried,
        vm_id: vmId,
      });
      expect(['Provisioning', 'Running']).toContain(again.body.state);
      const listed = await listedAs(wgIp, vmId, 'Running');
      expect(listed.host_ports).toHaveLength(1);
      expect(qemuPidsOf(vmId)).toHaveLength(1);
      expect((await vmsAt(wgIp)).map((vm) => vm.vm_id)).toEqual([vmId]);
      const sidecar = JSON.parse(
        readFileSync(join(workDir, nodeId, 'run', vmId, 'vm.json'), 'utf8'),
      ) as { driver: { pid: number }; error: string | null };
      expect(sidecar).toMatchObject({ driver: { pid: qemuPidsOf(vmId)[0] }, error: null });
      // Answered again, not made again.
      expect((await spawnAt(wgIp, request, { 'Idempotency-Key': key })).status).toBe(200);
      expect(qemuPidsOf(vmId)).toHaveLength(1);

      expect(await deleteAt(wgIp, vmId)).toBe(204);
      expect(qemuPidsOf(vmId)).toEqual([]);
      expect((await agent.stop()).code).toBe(0);
    },
  );

  it('killed again while it finishes the create: the next agent finishes it', async () => {
    const nodeId = 'cut-twice';
    const vmId = 'vm-00000000000c0172';
    const request = { ...SMALL, vm_id: vmId };
    const key = spawnKey('order-cut-twice', request);
    const failAt = { VM_HOST_FAILPOINT: 'after-disk' };
    const first = await startListeningAgent(agentEnv(nodeId, wgIp, failAt));
    await spawnAt(wgIp, request, { 'Idempotency-Key': key }).catch(() => undefined);
    expect(await first.waitForExit()).toEqual({ code: null, signal: 'SIGKILL' });
    // Killed at the same step as it makes the files again, before it listens.
    const second = startAgent(agentEnv(nodeId, wgIp, failAt));
    await second.waitForOutput(new RegExp(`failpoint after-disk reached for vm ${vmId}`));
    expect(await second.waitForExit()).toEqual({ code: null, signal: 'SIGKILL' });

    const agent = await startListeningAgent(agentEnv(nodeId, wgIp));
    await listedAs(wgIp, vmId, 'Running');
    expect(qemuPidsOf(vmId)).toHaveLength(1);
    expect(await spawnAt(wgIp, request, { 'Idempotency-Key': key })).toMatchObject({
      status: 200,
      body: { vm_id: vmId, state: 'Running' },
    });
    expect(await deleteAt(wgIp, vmId)).toBe(204);
    expect(qemuPidsOf(vmId)).toEqual([]);
    expect((await agent.stop()).code).toBe(0);
  });
});

/** An agent in a mount namespace of its own, where VM_DISK_DIR is a 2 MB tmpfs almost full. */
class AgentOnFullDisk {
  readonly process: ChildProcess;
  output = '';

  constructor(env: NodeJS.ProcessEnv, diskDir: string, freeKb: number) {
    const fill = `head -c $(( 2048 - ${freeKb} ))k /dev/zero > ${diskDir}/filler`;
    this.process = spawn(
      'unshare',
      [
        '-m',
        '--propagation',
        'private',
        'sh',
        '-c',
        `mount -t tmpfs -o size=2m,mode=0700 tmpfs ${diskDir} && ${fill} && exec "$0" "$1"`,
        process.execPath,
        VM_HOST_MAIN,
      ],
      { env: { PATH: process.env.PATH, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const collect = (chunk: Buffer): void => void (this.output += chunk.toString('utf8'));
    this.process.stdout!.on('data', collect);
    this.process.stderr!.on('data', collect);
  }

  /** A path as the agent sees it, inside its mount namespace. */
  inside(path: string): string {
    return `/proc/${this.process.pid}/root${path}`;
  }

  async stop(): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return;
    const exited = new Promise((resolve) => this.process.once('exit', resolve));
    this.process.kill('SIGTERM');
    await exited;
  }
}

describe('a full VM_DISK_DIR', () => {
  it("is refused before anything is written: a 422 naming disk_gb and the node's disk room, no run folder and no disk", async () => {
    const wgIp = '127.0.0.24';
    const diskDir = join(workDir, 'full-disk');
    rmSync(diskDir, { recursive: true, force: true });
    execFileSync('mkdir', ['-p', diskDir]);
    const agent = new AgentOnFullDisk(agentEnv('full-disk', wgIp), diskDir, 64);
    try {
      await eventually(
        'the agent on a full disk listening',
        () => Promise.resolve(/listening on 127\.0\.0\.24/.test(agent.output) || undefined),
        10_000,
      );
      // 64 KiB free on 2 MiB, less the reserve (5%): no room for a 64 MiB disk. (A disk that
      // fills between this judgement and the writes is a 507: the admission's unit spec.)
      const answer = await spawnAt(wgIp, SMALL);
      expect(answer.status).toBe(422);
      expect(answer.body.message).toBe(
        "disk_gb: 64 MiB does not fit in this node's disk room: 0 MiB committable of 0 MiB room in VM_DISK_DIR (reserve 0 MiB, 0 MiB committed to 0 other VM disk(s))",
      );
      expect(readdirSync(agent.inside(join(diskDir, 'run')))).toEqual([]);
      expect(readdirSync(agent.inside(join(diskDir, 'disks')))).toEqual([]);
      expect(await vmsAt(wgIp)).toEqual([]);
      // Not in the test's own mount namespace: the tmpfs was the agent's alone.
      expect(readdirSync(diskDir)).toEqual([]);
    } finally {
      await agent.stop();
    }
  });
});

/** Every entry under `root` with its kind and mode, e.g. `run/vm-1/qmp.sock socket 600`. */
function modesUnder(root: string, under = ''): string[] {
  return readdirSync(join(root, under), { withFileTypes: true }).flatMap((entry) => {
    const path = join(under, entry.name);
    const kind = entry.isDirectory() ? 'folder' : entry.isSocket() ? 'socket' : 'file';
    const line = `${path} ${kind} ${mode(join(root, path))}`;
    return entry.isDirectory() ? [line, ...modesUnder(root, path)] : [line];
  });
}

describe('a VM just started, by an agent never restarted', () => {
  const wgIp = '127.0.0.25';
  const nodeId = 'fresh';
  const diskDir = join(workDir, nodeId);
  let agent: Daemon;
  let vm: AgentVm;

  beforeAll(async () => {
    agent = await startListeningAgent(agentEnv(nodeId, wgIp));
    const answer = await spawnAt(wgIp, { ...SMALL, vcpu_count: 2 });
    expect(answer.status).toBe(201);
    vm = await listedAs(wgIp, answer.body.vm_id, 'Running');
  });

  afterAll(() => agent.stop());

  it("has every file QEMU and the agent wrote 0600, every folder 0700, QEMU's QMP and serial sockets 0600", () => {
    const vmId = vm.vm_id;
    expect(modesUnder(diskDir).sort()).toEqual(
      [
        'base folder 700',
        'deleted folder 700',
        'disks folder 700',
        `disks/${vmId}.qcow2 file 600`,
        'run folder 700',
        `run/${vmId} folder 700`,
        `run/${vmId}/qmp-copy socket 600`,
        `run/${vmId}/qemu.pid file 600`,
        `run/${vmId}/qmp.sock socket 600`,
        `run/${vmId}/seed.iso file 600`,
        `run/${vmId}/serial socket 600`,
        `run/${vmId}/serial.log file 600`,
        `run/${vmId}/vm.json file 600`,
      ].sort(),
    );
  });

  it('with its vm.json damaged, stays listed with the RAM, vCPUs and ports of its QEMU, and committed', async () => {
    const vmId = vm.vm_id;
    writeFileSync(join(diskDir, 'run', vmId, 'vm.json'), '{"vm_id": "' + vmId + '", "ram_al');
    const listed = await listedAs(wgIp, vmId, 'Error');
    expect(listed).toMatchObject({
      vm_type: 'unknown',
      ram_alloc_mb: SMALL.ram_mb,
      vcpu_count: 2,
      host_ports: vm.host_ports,
    });
    const beat = await listener.beat(nodeId, (body) =>
      body.vms.some((reported) => reported.vm_id === vmId && reported.state === 'Error'),
    );
    expect(beat.vms).toEqual([expect.objectContaining({ vm_id: vmId, ram_alloc_mb: 64 })]);
    // Still committed: its 64 MB and QEMU's 256 MB are in what the node reports used.
    expect(beat.ram_used_mb).toBeGreaterThanOrEqual(64 + 256);
    expect(qemuPidsOf(vmId)).toHaveLength(1);
    expect(await deleteAt(wgIp, vmId)).toBe(204);
    expect(qemuPidsOf(vmId)).toEqual([]);
  });
});

describe('KVM present but failing', () => {
  const wgIp = '127.0.0.26';
  const nodeId = 'broken-kvm';
  const realQemu = execFileSync('sh', ['-c', 'command -v qemu-system-x86_64'], {
    encoding: 'utf8',
  }).trim();
  /**
   * A KVM device the agent judges usable (a regular file it may open read-write), wherever the
   * test runs: with it the agent plans prefer_kvm VMs under KVM, whether or not /dev/kvm is here.
   */
  function kvmDevice(): string {
    const device = join(workDir, 'broken-kvm-device');
    writeFileSync(device, '', { mode: 0o600 });
    return device;
  }

  /** A qemu-system-x86_64 first on the agent's PATH that fails under KVM as a broken host does. */
  function brokenKvmPath(): string {
    const bin = join(workDir, 'broken-kvm-bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(
      join(bin, 'qemu-system-x86_64'),
      [
        '#!/bin/sh',
        'case "$*" in',
        '  *accel=kvm*) echo "qemu-system-x86_64: error: failed to set MSR 0x48f to 0x7fefff00036dfb" >&2; exit 1 ;;',
        'esac',
        `exec ${realQemu} "$@"`,
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    return `${bin}:${process.env.PATH}`;
  }

  it('runs a VM without prefer_kvm under KVM first (VM_ACCEL=auto); when every CPU model fails, under TCG, listed tcg and Running only then; the next heartbeat says no KVM', async () => {
    const device = kvmDevice();
    const agent = await startListeningAgent(
      agentEnv(nodeId, wgIp, {
        PATH: brokenKvmPath(),
        VM_HOST_KVM_DEVICE: device,
        VM_ACCEL: 'auto',
      }),
    );
    try {
      expect(agent.output).toContain(
        `test-only hook VM_HOST_KVM_DEVICE=${device} is set: KVM is judged usable by that file, not /dev/kvm`,
      );
      // The heartbeat reads the same device as the driver does.
      const beat = await listener.beat(nodeId);
      expect(beat.kvm_available).toBe(true);
      const answer = await spawnAt(wgIp, SMALL);
      expect(answer.status).toBe(201);
      expect(answer.body).toMatchObject({ state: 'Provisioning', accel: null });
      const vmId = answer.body.vm_id;
      // Every listing until it runs: never Running under KVM.
      const seen = new Set<string>();
      const running = await eventually(
        `${vmId} Running`,
        async () => {
          const vm = (await vmsAt(wgIp)).find((listed) => listed.vm_id === vmId);
          if (vm) seen.add(`${vm.state} ${vm.accel}`);
          return vm?.state === 'Running' ? vm : undefined;
        },
        10_000,
      );
      expect(running.accel).toBe('tcg');
      expect([...seen].filter((state) => state.startsWith('Running'))).toEqual(['Running tcg']);
      const sidecar = JSON.parse(
        readFileSync(join(workDir, nodeId, 'run', vmId, 'vm.json'), 'utf8'),
      ) as { driver: { accel: string; pid: number }; accel_fallback?: string };
      expect(sidecar.driver.accel).toBe('tcg');
      expect(sidecar.accel_fallback).toMatch(
        /^QEMU: could not start under KVM: host: .*failed to set MSR 0x48f.*; host,-arch-capabilities: .*; qemu64: .*; started under TCG$/,
      );
      expect(agent.output).toMatch(
        new RegExp(
          `vm ${vmId}: QEMU: could not start under KVM: host: .*failed to set MSR.*; starting it again under TCG`,
        ),
      );
      expect(agent.output).toMatch(
        new RegExp(
          `node ${nodeId}: KVM failed at run time: vm ${vmId}: could not start under KVM: .*; kvm_available is false until the agent restarts`,
        ),
      );
      const [qemu] = liveQemusUnder(join(workDir, nodeId));
      expect(qemu.pid).toBe(sidecar.driver.pid);
      expect(qemu.args).toContain(`tcg,tb-size=${TCG_TRANSLATION_CACHE_MB}`);
      expect((await listener.beat(nodeId)).kvm_available).toBe(false);
      // The next VM starts under TCG at once: its log says nothing of KVM.
      const second = await spawnAt(wgIp, SMALL);
      expect((await listedAs(wgIp, second.body.vm_id, 'Running')).accel).toBe('tcg');
      expect(agent.output).not.toContain(
        `vm ${second.body.vm_id}: QEMU: could not start under KVM`,
      );
      expect(await deleteAt(wgIp, vmId)).toBe(204);
      expect(await deleteAt(wgIp, second.body.vm_id)).toBe(204);
      expect(qemuPidsOf(vmId)).toEqual([]);
    } finally {
      await agent.stop();
    }
  });

  it('under VM_ACCEL=kvm, lists the VM as Error with the reason and starts no TCG', async () => {
    const agent = await startListeningAgent(
      agentEnv('kvm-only', '127.0.0.27', {
        PATH: brokenKvmPath(),
        VM_HOST_KVM_DEVICE: kvmDevice(),
        VM_ACCEL: 'kvm',
      }),
    );
    try {
      const answer = await spawnAt('127.0.0.27', SMALL);
      expect(answer.status).toBe(201);
      const vmId = answer.body.vm_id;
      await listedAs('127.0.0.27', vmId, 'Error');
      const sidecar = JSON.parse(
        readFileSync(join(workDir, 'kvm-only', 'run', vmId, 'vm.json'), 'utf8'),
      ) as { error: string };
      expect(sidecar.error).toMatch(
        /^QEMU: could not start under KVM: host: .*failed to set MSR.*; VM_ACCEL=kvm: not started under TCG$/,
      );
      expect(qemuPidsOf(vmId)).toEqual([]);
      expect(await deleteAt('127.0.0.27', vmId)).toBe(204);
    } finally {
      await agent.stop();
    }
  });
});

describe('VM_WG_IP', () => {
  it.each(['0.0.0.0', '::', '224.0.0.1', '255.255.255.255'])(
    'refuses %s at start-up, naming VM_WG_IP',
    async (address) => {
      const agent = startAgent(agentEnv('bad-wg-ip', address));
      expect((await agent.waitForExit()).code).toBe(2);
      expect(agent.output).toContain(
        'configuration error: VM_WG_IP must be a unicast IPv4 or IPv6 address of this host',
      );
    },
  );
});
