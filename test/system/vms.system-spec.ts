import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { basename, join } from 'node:path';
import { TCG_TRANSLATION_CACHE_MB } from '@app/fleet-domain';
import {
  Daemon,
  FLEET_URL,
  enrolled,
  ListedNode,
  eventually,
  getJson,
  listedNodes,
  startAgent,
  listeningFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { killQemusUnder, liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

jest.setTimeout(40_000);

/**
 * VMs end to end with real QEMU (TCG, 64-128 MB, a blank qcow2 base made here): the real
 * controller places, the chosen agent starts qemu-system-x86_64, heartbeats report it.
 */
const INTERVAL_MS = 1000;

interface ListedVm {
  vm_id: string;
  vm_type: string;
  state: string;
  ram_alloc_mb: number;
  vcpu_count: number;
  started_at: string | null;
  tenant_id: string | null;
  host_ports: Array<{ host_port: number; guest_port: number; protocol: string }>;
  node_id: string;
}

const workDir = scratchFolder('vms-');
const baseImage = join(workDir, 'base.qcow2');

/** Every live QEMU process started from this suite's folder (zombies do not count). */
function qemuProcessesOfSuite(): number[] {
  return liveQemusUnder(workDir).map(({ pid }) => pid);
}

function agentEnv(nodeId: string, wgIp: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    VM_FLEET_ENDPOINT: FLEET_URL,
    VM_NODE_ID: nodeId,
    VM_WG_IP: wgIp,
    VM_HEARTBEAT_INTERVAL_S: '1',
    VM_DISK_DIR: join(workDir, nodeId),
    VM_BASE_IMAGE: baseImage,
    // vm-node-a removes a deleted VM's disk at once; the others keep it the default day.
    ...(nodeId === 'vm-node-a' ? { VM_DISK_RETENTION_S: '0' } : {}),
    ...extra,
  };
}

/** Whether a TCP connection to host:port is accepted (QEMU's forward accepts before the guest). */
function acceptsConnections(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 2_000 });
    const done = (accepted: boolean) => {
      socket.destroy();
      resolve(accepted);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}

async function post(
  path: string,
  body: unknown,
): Promise<{ status: number; body: { message: string; vm_id: string; node_id: string } }> {
  const response = await fetch(`${FLEET_URL}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as { message: string; vm_id: string; node_id: string },
  };
}

async function del(path: string): Promise<number> {
  return (await fetch(`${FLEET_URL}${path}`, { method: 'DELETE' })).status;
}

async function vms(query = ''): Promise<ListedVm[]> {
  return getJson<ListedVm[]>(`/v1/vms${query}`);
}

async function vmListed(vmId: string, state?: string): Promise<ListedVm> {
  return eventually(
    `${vmId} listed${state ? ` ${state}` : ''}`,
    async () => (await vms()).find((vm) => vm.vm_id === vmId && (!state || vm.state === state)),
    // QEMU's start-up on a loaded machine, then the heartbeat that reports it.
    10_000,
  );
}

function ownerDir(vmId: string): string {
  const owner = ['vm-node-a', 'vm-node-b'].find((node) =>
    existsSync(join(workDir, node, 'run', vmId)),
  );
  if (!owner) throw new Error(`no agent folder holds ${vmId}`);
  return join(workDir, owner);
}

/** The node whose agent runs `vmId`. */
function ownerOf(vmId: string): string {
  return basename(ownerDir(vmId));
}

function qemuPidOf(vmId: string): number {
  return Number(readFileSync(join(ownerDir(vmId), 'run', vmId, 'qemu.pid'), 'utf8').trim());
}

describe('VMs with real QEMU', () => {
  const agents: Record<string, Daemon> = {};

  beforeAll(async () => {
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', baseImage, '64M']);
    await listeningFleetDaemon();
    [agents['vm-node-a'], agents['vm-node-b']] = await Promise.all([
      enrolled(startAgent(agentEnv('vm-node-a', '127.0.0.2'))),
      enrolled(startAgent(agentEnv('vm-node-b', '127.0.0.3'))),
    ]);
  });

  afterAll(async () => {
    await stopAllDaemons();
    killQemusUnder(workDir);
  });

  // Each test starts on a fleet without VMs: whatever one made is deleted after it.
  afterEach(async () => {
    for (const vm of await vms()) await del(`/v1/vms/${vm.vm_id}`);
    killQemusUnder(workDir);
  });

  /**
   * Enrolls one more node, with its own VM_BASE_IMAGE, and asks it for a small VM. The node is
   * reserved, so no other test's placement ever picks it.
   */
  async function createOnNodeWithBaseImage(nodeId: string, wgIp: string, image: string) {
    agents[nodeId] = await enrolled(
      startAgent(agentEnv(nodeId, wgIp, { VM_BASE_IMAGE: image, VM_RESERVED: 'true' })),
    );
    return post('/v1/vms', { vm_type: 'e2e-x', ram_mb: 64, vcpu_count: 1, preferred_node: nodeId });
  }

  /** Asks the controller for a 96 MB VM of tenant acme. */
  function createVm() {
    return post('/v1/vms', { vm_type: 'e2e-web', ram_mb: 96, vcpu_count: 1, tenant_id: 'acme' });
  }

  /** A VM of tenant acme, created through the controller and listed Running. */
  async function runningVm(): Promise<{ vmId: string; owner: string }> {
    const created = await createVm();
    expect(created.status).toBe(201);
    const vmId = created.body.vm_id;
    await vmListed(vmId, 'Running');
    return { vmId, owner: ownerOf(vmId) };
  }

  it('creates a VM through the controller; a real QEMU process runs it; it is listed Running', async () => {
    const created = await createVm();
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      vm_type: 'e2e-web',
      state: 'Provisioning',
      ram_alloc_mb: 96,
      vcpu_count: 1,
      tenant_id: 'acme',
    });
    const vmId = created.body.vm_id;
    expect(vmId).toMatch(/^[a-z0-9-]+$/);

    const running = await vmListed(vmId, 'Running');
    expect(running.host_ports).toEqual([
      { host_port: expect.any(Number), guest_port: 22, protocol: 'tcp' },
    ]);
    expect(Number.isNaN(Date.parse(running.started_at ?? ''))).toBe(false);

    const pid = qemuPidOf(vmId);
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    expect(cmdline[0]).toBe('qemu-system-x86_64');
    expect(cmdline).toContain(`guest=${vmId}`);
    expect(cmdline).toContain('96M');
    // TCG, with its translation cache bounded (see TCG_TRANSLATION_CACHE_MB).
    expect(cmdline).toContain('q35');
    expect(cmdline).toContain(`tcg,tb-size=${TCG_TRANSLATION_CACHE_MB}`);

    const owner = ownerOf(vmId);
    expect(created.body.node_id).toBe(owner);
    expect(running.node_id).toBe(owner);
    const nodes = await eventually(
      'vm_count 1 on the owner',
      async () => {
        const listed = await listedNodes();
        return listed.find((node) => node.node_id === owner)?.vm_count === 1 ? listed : undefined;
      },
      2 * INTERVAL_MS,
    );
    expect(nodes.find((node: ListedNode) => node.node_id !== owner)?.vm_count).toBe(0);
  });

  it('is reached as README shows: its SSH port is forwarded on the wg_ip of its node_id, and only there', async () => {
    const { vmId, owner } = await runningVm();
    const vm = (await vms()).find((listed) => listed.vm_id === vmId)!;
    expect(vm.node_id).toBe(owner);
    const { wg_ip } = await getJson<ListedNode>(`/v1/nodes/${vm.node_id}`);
    expect(wg_ip).toBe(owner === 'vm-node-a' ? '127.0.0.2' : '127.0.0.3');
    const [{ host_port }] = vm.host_ports;
    expect(await acceptsConnections(wg_ip, host_port)).toBe(true);
    expect(await acceptsConnections('127.0.0.1', host_port)).toBe(false);
  });

  it('finds it by its tenant, and not by another', async () => {
    const { vmId } = await runningVm();
    expect((await vms('?tenant_id=acme')).map((vm) => vm.vm_id)).toEqual([vmId]);
    expect(await vms('?tenant_id=globex')).toEqual([]);
  });

  it('still lists it, tenant and all, after its agent was killed and restarted', async () => {
    const { vmId, owner } = await runningVm();
    const agent = agents[owner];
    agent.process.kill('SIGKILL');
    await agent.waitForExit();
    const restartedAt = Date.now();
    agents[owner] = await enrolled(
      startAgent(agentEnv(owner, owner === 'vm-node-a' ? '127.0.0.2' : '127.0.0.3')),
    );
    // The record now comes from a heartbeat of the new agent.
    const node = (await listedNodes()).find((listed) => listed.node_id === owner);
    expect(Date.parse(node!.last_heartbeat)).toBeGreaterThan(restartedAt);
    const [listed] = await vms('?tenant_id=acme');
    expect(listed).toMatchObject({ vm_id: vmId, state: 'Running', tenant_id: 'acme' });
    expect(qemuProcessesOfSuite()).toContain(qemuPidOf(vmId));
  });

  it('keeps it running when its agent is stopped (SIGTERM, as systemctl stop sends it); started again, the agent lists it at its first heartbeat and it can be deleted', async () => {
    const { vmId, owner } = await runningVm();
    const pid = qemuPidOf(vmId);
    const wgIp = owner === 'vm-node-a' ? '127.0.0.2' : '127.0.0.3';
    const stopped = agents[owner];
    expect((await stopped.stop()).code).toBe(0);
    expect(stopped.output).toMatch(
      new RegExp(`agent stopping; its 1 VM\\(s\\) \\(${vmId}\\) are left as they are`),
    );
    expect(qemuProcessesOfSuite()).toContain(pid);
    // Until the node drops out, the VM is listed, and a delete is a 502 that keeps it.
    expect(await del(`/v1/vms/${vmId}`)).toBe(502);
    expect(qemuProcessesOfSuite()).toContain(pid);

    agents[owner] = await enrolled(startAgent(agentEnv(owner, wgIp)));
    const listed = await vmListed(vmId, 'Running');
    expect(listed.node_id).toBe(owner);
    // The same process, adopted: not a new one.
    expect(qemuPidOf(vmId)).toBe(pid);
    expect(await del(`/v1/vms/${vmId}`)).toBe(204);
    await eventually(
      'QEMU gone',
      () => Promise.resolve(qemuProcessesOfSuite().includes(pid) ? undefined : true),
      5_000,
    );
  });

  it.each([
    ['vm-node-a', 'VM_DISK_RETENTION_S=0', 'its folder and disk removed at once'],
    ['vm-node-b', 'the default retention', 'its folder removed, its disk kept in deleted/'],
  ])(
    'deletes it through the controller (%s, %s): 204, QEMU gone within 5 s, unlisted, %s; again: 404',
    async (owner, _retention, _files) => {
      const created = await post('/v1/vms', {
        vm_type: 'e2e-web',
        ram_mb: 64,
        vcpu_count: 1,
        preferred_node: owner,
      });
      expect(created.status).toBe(201);
      const vmId = created.body.vm_id;
      await vmListed(vmId, 'Running');
      expect(ownerOf(vmId)).toBe(owner);
      const pid = qemuPidOf(vmId);
      const dir = join(workDir, owner);
      expect(existsSync(join(dir, 'disks', `${vmId}.qcow2`))).toBe(true);
      expect(await del(`/v1/vms/${vmId}`)).toBe(204);
      await eventually(
        'QEMU gone',
        () => Promise.resolve(qemuProcessesOfSuite().includes(pid) ? undefined : true),
        5_000,
      );
      expect((await vms()).map((vm) => vm.vm_id)).not.toContain(vmId);
      expect(existsSync(join(dir, 'run', vmId))).toBe(false);
      expect(existsSync(join(dir, 'disks', `${vmId}.qcow2`))).toBe(false);
      const kept = readdirSync(join(dir, 'deleted')).filter((name) =>
        name.endsWith(`.${vmId}.qcow2`),
      );
      expect(kept).toHaveLength(owner === 'vm-node-a' ? 0 : 1);
      expect(await del(`/v1/vms/${vmId}`)).toBe(404);
    },
  );

  it('shows a VM whose QEMU died behind the agent back as Stopped while its restart waits out the backoff, and still deletes it then', async () => {
    const created = await post('/v1/vms', { vm_type: 'e2e-doomed', ram_mb: 64, vcpu_count: 1 });
    expect(created.status).toBe(201);
    const doomed: string = created.body.vm_id;
    await vmListed(doomed, 'Running');
    process.kill(qemuPidOf(doomed), 'SIGKILL');
    await vmListed(doomed, 'Stopped');
    expect(await del(`/v1/vms/${doomed}`)).toBe(204);
    expect((await vms()).map((vm) => vm.vm_id)).not.toContain(doomed);
  });

  it('answers bad input as the contract says, and starts nothing', async () => {
    const before = qemuProcessesOfSuite().length;
    const listedBefore = (await vms()).map((vm) => vm.vm_id);
    for (const [field, body] of [
      ['ram_mb', { vm_type: 'x', ram_mb: 0, vcpu_count: 1 }],
      ['ram_mb', { vm_type: 'x', ram_mb: -64, vcpu_count: 1 }],
      ['vcpu_count', { vm_type: 'x', ram_mb: 64, vcpu_count: 0 }],
      ['vm_type', { vm_type: '../x', ram_mb: 64, vcpu_count: 1 }],
    ] as const) {
      const answer = await post('/v1/vms', body);
      expect(answer.status).toBe(400);
      expect(answer.body.message).toContain(field);
    }
    const unknown = await post('/v1/vms', {
      vm_type: 'x',
      ram_mb: 64,
      vcpu_count: 1,
      preferred_node: 'ghost',
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.message).toContain('ghost');

    // A node whose base image is missing cannot make the VM: 502 naming the image, nothing started.
    const missing = await createOnNodeWithBaseImage(
      'vm-node-broken',
      '127.0.0.4',
      join(workDir, 'missing.qcow2'),
    );
    expect(missing.status).toBe(502);
    expect(missing.body.message).toContain('missing.qcow2');

    expect(qemuProcessesOfSuite()).toHaveLength(before);
    expect(readdirSync(join(workDir, 'vm-node-broken', 'run'))).toEqual([]);
    expect((await vms()).map((vm) => vm.vm_id)).toEqual(listedBefore);
  });

  it('lists a VM whose disk step failed as Error, with the reason logged, until it is deleted', async () => {
    const notAnImage = join(workDir, 'not-an-image.qcow2');
    writeFileSync(notAnImage, 'this is not a qcow2 image\n');
    const created = await createOnNodeWithBaseImage('vm-node-badbase', '127.0.0.5', notAnImage);
    const agent = agents['vm-node-badbase'];
    expect(created.status).toBe(201);
    const vmId = created.body.vm_id;
    await vmListed(vmId, 'Error');
    await agent.waitForOutput(new RegExp(`vm ${vmId} failed at the disk: qemu-img failed`));
    expect(
      qemuProcessesOfSuite().filter((pid) =>
        readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(vmId),
      ),
    ).toEqual([]);
    expect(await del(`/v1/vms/${vmId}`)).toBe(204);
    expect((await vms()).map((vm) => vm.vm_id)).not.toContain(vmId);
  });
});
