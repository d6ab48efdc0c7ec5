import { constants, accessSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  Daemon,
  FLEET_URL,
  ListedNode,
  enrolled,
  eventually,
  getJson,
  listeningFleetDaemon,
  startAgent,
  stopAllDaemons,
} from '../support/daemons';
import { guestImageBuildCommand, guestImagePath } from '../support/guest-image';
import { ppnFleet } from '../support/ppn-fleet-cli';
import { killQemusUnder, liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * The product's default, VM_ACCEL=auto, with this host's real /dev/kvm and the guest image
 * (a blank disk never runs far enough for KVM to fail): a VM created without prefer_kvm runs
 * under KVM when it can. On a host whose KVM opens but cannot run guests (nested, as here and
 * in CI: `-cpu host` aborts on MSR 0x10a, `host,-arch-capabilities` starts and stops with QMP
 * internal-error), the agent goes down its CPU models, sees the guest stop, starts it again under
 * TCG, lists it `accel: tcg` and Running only then, and its node reports kvm_available false.
 * Where KVM works, the VM is listed `accel: kvm` and the node keeps kvm_available true.
 */
jest.setTimeout(120_000);

const NODE_ID = 'kvm-node';
const workDir = scratchFolder('kvm-');

interface ListedVm {
  vm_id: string;
  state: string;
  accel: string | null;
}

function kvmDeviceUsable(): boolean {
  try {
    accessSync('/dev/kvm', constants.R_OK | constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

describe('a VM without prefer_kvm on a node with /dev/kvm (VM_ACCEL=auto)', () => {
  const image = guestImagePath();
  let agent: Daemon;

  beforeAll(async () => {
    if (!existsSync(image)) {
      throw new Error(
        `no guest image ${image}: npm run test:system builds it as root, or: ${guestImageBuildCommand()}`,
      );
    }
    await listeningFleetDaemon();
    agent = await enrolled(
      startAgent({
        VM_FLEET_ENDPOINT: FLEET_URL,
        VM_NODE_ID: NODE_ID,
        VM_WG_IP: '127.0.0.1',
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: join(workDir, 'disks'),
        VM_DISK_RETENTION_S: '0',
        VM_BASE_IMAGE: image,
        VM_ACCEL: 'auto',
      }),
    );
  });

  afterAll(async () => {
    await stopAllDaemons();
    killQemusUnder(workDir);
  });

  it('runs under KVM when it can, else under TCG once KVM failed, listed with the accel its QEMU has, and Running only under it', async () => {
    const kvmHere = kvmDeviceUsable();
    expect((await getJson<ListedNode>(`/v1/nodes/${NODE_ID}`)).kvm_available).toBe(kvmHere);
    const createdAt = Date.now();
    const response = await fetch(`${FLEET_URL}/v1/vms`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ vm_type: 'kvm-probe', ram_mb: 256, vcpu_count: 1 }),
    });
    expect(response.status).toBe(201);
    const { vm_id: vmId } = (await response.json()) as { vm_id: string };
    const seen = new Set<string>();
    const running = await eventually(
      `${vmId} Running`,
      async () => {
        const vm = (await getJson<ListedVm[]>('/v1/vms')).find((listed) => listed.vm_id === vmId);
        if (vm) seen.add(`${vm.state} ${vm.accel}`);
        return vm?.state === 'Running' ? vm : undefined;
      },
      90_000,
      100,
    );
    const runningAt = Date.now();
    const [qemu, ...others] = liveQemusUnder(workDir).filter(({ args }) =>
      args.includes(`guest=${vmId}`),
    );
    expect(others).toEqual([]);
    const qemuAccel = qemu.args.some((arg) => arg.includes('accel=kvm')) ? 'kvm' : 'tcg';
    expect(running.accel).toBe(qemuAccel);
    expect([...seen].filter((state) => state.startsWith('Running'))).toEqual([
      `Running ${qemuAccel}`,
    ]);
    // What an operator sees: the VM's accel.
    const vms = await ppnFleet(['vms']);
    expect(vms.stdout).toMatch(
      new RegExp(`^${vmId} +kvm-probe +Running +256 MB +1 +${qemuAccel} `, 'm'),
    );
    if (qemuAccel === 'tcg' && kvmHere) {
      const fellBackAt = await agent.waitForOutput(
        new RegExp(`vm ${vmId}: QEMU: .*; starting it again under TCG`),
      );
      expect(agent.output).toMatch(
        new RegExp(`node ${NODE_ID}: KVM failed at run time: vm ${vmId}: .*`),
      );
      await eventually(
        `${NODE_ID} reported without KVM`,
        async () =>
          (await getJson<ListedNode>(`/v1/nodes/${NODE_ID}`)).kvm_available === false
            ? true
            : undefined,
        5_000,
      );
      console.log(
        `kvm-fallback: KVM failed here; the agent fell back to TCG ${((fellBackAt - createdAt) / 1000).toFixed(1)} s after the create, listed Running ${((runningAt - createdAt) / 1000).toFixed(1)} s after it (${agent.output.match(new RegExp(`vm ${vmId}: QEMU: ([^\\n]*); starting`))?.[1] ?? ''})`,
      );
    } else {
      expect((await getJson<ListedNode>(`/v1/nodes/${NODE_ID}`)).kvm_available).toBe(
        qemuAccel === 'kvm',
      );
      console.log(
        `kvm-fallback: the VM runs under ${qemuAccel}, Running ${((runningAt - createdAt) / 1000).toFixed(1)} s after the create`,
      );
    }
    // And the node's KVM as its last heartbeat said it.
    const node = await getJson<ListedNode>(`/v1/nodes/${NODE_ID}`);
    const status = await ppnFleet(['status']);
    expect(status.stdout).toMatch(
      new RegExp(`^${NODE_ID} .* ${node.kvm_available ? 'yes' : 'no'} +\\d+ s ago`, 'm'),
    );
    expect((await fetch(`${FLEET_URL}/v1/vms/${vmId}`, { method: 'DELETE' })).status).toBe(204);
  });
});
