import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { deriveNodeToken } from '@app/daemon';
import {
  Daemon,
  FLEET_URL,
  OUTPUT_TIMEOUT_MS,
  enrolled,
  eventually,
  startAgent,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { heartbeat } from '../support/heartbeats';
import { ppnFleet } from '../support/ppn-fleet-cli';
import { liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * A VM belongs to its node, and one bad node does not take the fleet's creates: the built
 * controller with per-node tokens, real agents and QEMU guests (TCG, 64 MB, a blank base image).
 * A node heartbeating with its own valid token and another node's VM id changes nothing that
 * node's operator sees, and the DELETE ends that node's QEMU; an agent whose VM_DISK_DIR (a
 * tmpfs) is full refuses them (no disk room, 422) and the creates land elsewhere; a frozen
 * agent's timed-out create has `ppn-fleet` print its --key, and the retry with it answers the one
 * VM it made.
 */
jest.setTimeout(180_000);

const SECRET = 's'.repeat(48);
const API = 'a'.repeat(40);
const workDir = scratchFolder('vm-ownership-');
const baseImage = join(workDir, 'base.qcow2');
const fullDir = join(workDir, 'full');

interface ListedVm {
  vm_id: string;
  node_id: string;
  state: string;
  node_silent_since?: string;
}

const asOperator = { authorization: `Bearer ${API}` };

function agent(nodeId: string, wgIp: string, diskDir = join(workDir, nodeId)): Daemon {
  return startAgent({
    VM_FLEET_ENDPOINT: FLEET_URL,
    VM_NODE_ID: nodeId,
    VM_WG_IP: wgIp,
    VM_HEARTBEAT_INTERVAL_S: '1',
    VM_DISK_DIR: diskDir,
    VM_DISK_RETENTION_S: '0',
    VM_BASE_IMAGE: baseImage,
    VM_FLEET_NODE_TOKEN: deriveNodeToken(SECRET, nodeId),
  });
}

async function create(body: object): Promise<{ status: number; vm: ListedVm }> {
  const response = await fetch(`${FLEET_URL}/v1/vms`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...asOperator },
    body: JSON.stringify(body),
  });
  return { status: response.status, vm: (await response.json()) as ListedVm };
}

async function listed(): Promise<ListedVm[]> {
  const response = await fetch(`${FLEET_URL}/v1/vms`, { headers: asOperator });
  return (await response.json()) as ListedVm[];
}

function qemusOf(vmId: string): number {
  return liveQemusUnder(workDir).filter(({ args }) => args.includes(`guest=${vmId}`)).length;
}

describe('VMs that belong to their node', () => {
  let fleet: Daemon;

  beforeAll(async () => {
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', baseImage, '64M']);
    fleet = startFleetDaemon({ VM_FLEET_NODE_SECRET: SECRET, VM_FLEET_API_TOKEN: API });
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
  });

  afterAll(async () => {
    await stopAllDaemons();
    try {
      execFileSync('umount', [fullDir]);
    } catch {
      // not mounted
    }
  });

  it("ignores another node's VM id in a heartbeat: node-c's operator sees nothing change, and the DELETE ends node-c's QEMU", async () => {
    await enrolled(agent('node-c', '127.0.0.11'));
    const { status, vm } = await create({
      vm_type: 'victim',
      ram_mb: 64,
      vcpu_count: 1,
      tenant_id: 'victim',
      preferred_node: 'node-c',
    });
    expect(status).toBe(201);
    await eventually(
      `${vm.vm_id} Running on node-c`,
      async () =>
        (await listed()).some((one) => one.vm_id === vm.vm_id && one.state === 'Running') &&
        qemusOf(vm.vm_id) === 1
          ? true
          : undefined,
      OUTPUT_TIMEOUT_MS,
    );
    const before = await listed();

    // node-a, with its own valid token, lists node-c's VM at every beat.
    const claim = heartbeat({
      node_id: 'node-a',
      wg_ip: '127.0.0.12',
      spawn_port: 9,
      vms: [before.find((one) => one.vm_id === vm.vm_id)!].map(
        ({ node_id: _node, ...reported }) => reported,
      ) as never,
    });
    for (let beat = 0; beat < 3; beat++) {
      const response = await fetch(`${FLEET_URL}/v1/nodes/heartbeat`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${deriveNodeToken(SECRET, 'node-a')}`,
        },
        body: JSON.stringify({ ...claim, timestamp_utc: new Date().toISOString() }),
      });
      expect(response.status).toBe(200);
    }
    await fleet.waitForOutput(
      new RegExp(`node node-a .* lists vm ${vm.vm_id}, which node node-c holds: ignored`),
    );
    const after = await listed();
    expect(after.filter((one) => one.vm_id === vm.vm_id)).toEqual(
      before.filter((one) => one.vm_id === vm.vm_id),
    );
    expect(after.filter((one) => one.vm_id === vm.vm_id)).toHaveLength(1);

    const deleted = await fetch(`${FLEET_URL}/v1/vms/${vm.vm_id}`, {
      method: 'DELETE',
      headers: asOperator,
    });
    expect(deleted.status).toBe(204);
    await eventually(
      `${vm.vm_id}'s QEMU gone from node-c`,
      () => Promise.resolve(qemusOf(vm.vm_id) === 0 ? true : undefined),
      15_000,
      200,
    );
  });

  it('moves creates on from an agent whose VM_DISK_DIR is full (no disk room, 422): five in a row land elsewhere', async () => {
    mkdirSync(fullDir, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', fullDir]);
    // "a-full" sorts first: with the same RAM as the others, placement tries it first.
    await enrolled(agent('a-full', '127.0.0.13', fullDir));
    await enrolled(agent('b-healthy', '127.0.0.14'));
    try {
      execFileSync('dd', ['if=/dev/zero', `of=${join(fullDir, 'filler')}`, 'bs=64k']);
    } catch {
      // dd stops at ENOSPC: the folder is full.
    }
    // Each VM placed takes 64 MB and its overhead off its node: a-full, left empty, soon has the
    // most room and is tried; refused, it is passed over for the creates after.
    const placed: ListedVm[] = [];
    for (let i = 0; i < 5; i++) {
      const { status, vm } = await create({ vm_type: 'spill', ram_mb: 64, vcpu_count: 1 });
      expect(status).toBe(201);
      placed.push(vm);
    }
    expect(placed.filter((vm) => vm.node_id === 'a-full')).toEqual([]);
    await fleet.waitForOutput(
      /spawn on node a-full failed: node a-full refused the VM: disk_gb: .* does not fit in this node's disk room/,
    );
    await fleet.waitForOutput(
      /node a-full failed \(no disk room for the VM \(422\)\); trying the next best node/,
    );
    for (const vm of placed) {
      await fetch(`${FLEET_URL}/v1/vms/${vm.vm_id}`, { method: 'DELETE', headers: asOperator });
    }
  });

  it("prints a frozen agent's --key after its create timed out, and the retry with it answers the one VM", async () => {
    const frozen = await enrolled(agent('z-frozen', '127.0.0.15'));
    const pid = frozen.process.pid!;
    process.kill(pid, 'SIGSTOP');
    const env = { VM_FLEET_API_TOKEN: API };
    const args = ['vm', 'create', '--type', 'frozen', '--ram', '64', '--vcpus', '1'];
    let first;
    try {
      first = await ppnFleet([...args, '--node', 'z-frozen'], env);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    expect(first.code).toBe(1);
    expect(first.stderr).toContain('agent of node z-frozen could not be reached');
    const key = /run the same command with --key (\S+) to find out/.exec(first.stderr)?.[1];
    expect(first.stderr).toContain('the VM may exist');
    expect(key).toMatch(/^[0-9a-f-]{36}$/);

    // The thawed agent refuses the spawn it reads past its deadline; the retry, to the same
    // node with the same key and id while that first dispatch is unresolved, makes the one VM.
    const retry = await eventually(
      'the retry answered',
      async () => {
        const run = await ppnFleet([...args, '--node', 'z-frozen', '--key', key!, '--json'], env);
        return run.code === 0 ? run : undefined;
      },
      60_000,
      1_000,
    );
    const vm = JSON.parse(retry.stdout) as ListedVm;
    expect(vm.node_id).toBe('z-frozen');
    const ofFrozen = (await listed()).filter((one) => one.node_id === 'z-frozen');
    expect(ofFrozen.map((one) => one.vm_id)).toEqual([vm.vm_id]);
    await eventually(
      'one QEMU for it',
      () => Promise.resolve(qemusOf(vm.vm_id) === 1 ? true : undefined),
      OUTPUT_TIMEOUT_MS,
      200,
    );
  });
});
