import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statfsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  Daemon,
  FLEET_URL,
  enrolled,
  eventually,
  getJson,
  listeningFleetDaemon,
  startAgent,
  stopAllDaemons,
} from '../support/daemons';
import { guestImageBuildCommand, guestImagePath } from '../support/guest-image';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp, sshRun } from '../support/guest-ssh';
import { ppnFleet } from '../support/ppn-fleet-cli';
import { killQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * Two real guests (the Debian image, 4 GiB disks) on an agent whose VM_DISK_DIR is a file system
 * of its own (ext4 of 10 GiB on a loop device, in the tier's mount namespace): room for two
 * disks at their virtual size, not three. Without thin provisioning, a guest writing until its
 * disk is full gets ENOSPC and its neighbour keeps writing; a third VM is refused naming the
 * room. With thin provisioning, a full file system pauses the VM that writes: listed Error with
 * the reason and counted, refused a start while full, and resumed by the agent once there is
 * room again.
 */
jest.setTimeout(2 * GUEST_SSH_DEADLINE_MS + 300_000);

const NODE_ID = 'disk-node';
const WG_IP = '127.0.0.1';
const METRICS = '127.0.0.1:9311';
const workDir = scratchFolder('disk-room-');
const fsImage = join(workDir, 'fs.img');
const diskDir = join(workDir, 'disks');
const key = join(workDir, 'id_ed25519');
const MIB = 1024 * 1024;

interface ListedVm {
  vm_id: string;
  state: string;
  host_ports: Array<{ host_port: number; guest_port: number }>;
}

function startNodeAgent(pubkey: string, diskOvercommit: string): Promise<Daemon> {
  return enrolled(
    startAgent({
      VM_FLEET_ENDPOINT: FLEET_URL,
      VM_NODE_ID: NODE_ID,
      VM_WG_IP: WG_IP,
      VM_HEARTBEAT_INTERVAL_S: '1',
      VM_DISK_DIR: diskDir,
      VM_DISK_RETENTION_S: '0',
      VM_BASE_IMAGE: guestImagePath(),
      VM_SSH_PUBKEY: pubkey,
      VM_ACCEL: 'auto',
      VM_DISK_OVERCOMMIT: diskOvercommit,
      VM_METRICS_ADDR: METRICS,
    }),
  );
}

async function listed(vmId: string, state: string, timeoutMs = 60_000): Promise<ListedVm> {
  return eventually(
    `${vmId} listed ${state}`,
    async () =>
      (await getJson<ListedVm[]>('/v1/vms')).find((vm) => vm.vm_id === vmId && vm.state === state),
    timeoutMs,
    200,
  );
}

function createVm(body: object): Promise<Response> {
  return fetch(`${FLEET_URL}/v1/vms`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

const sshPortOf = (vm: ListedVm): number =>
  vm.host_ports.find(({ guest_port }) => guest_port === 22)!.host_port;

async function pausedGauge(): Promise<number> {
  const text = await (await fetch(`http://${METRICS}/metrics`)).text();
  return Number(/^ppn_host_vms_paused_disk_full (\S+)$/m.exec(text)?.[1]);
}

describe('disk room: a guest cannot take its neighbour’s', () => {
  let agent: Daemon;
  let pubkey: string;
  const guests: Record<'writer' | 'neighbour', { vmId: string; port: number }> = {
    writer: { vmId: '', port: 0 },
    neighbour: { vmId: '', port: 0 },
  };
  const inGuest = (name: keyof typeof guests, command: string): Promise<string> =>
    sshRun(key, WG_IP, guests[name].port, command);

  beforeAll(async () => {
    if (!existsSync(guestImagePath())) {
      throw new Error(
        `no guest image ${guestImagePath()}: npm run test:system builds it as root, or: ${guestImageBuildCommand()}`,
      );
    }
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'disk-room', '-f', key]);
    pubkey = readFileSync(`${key}.pub`, 'utf8').trim();
    // Sparse: it takes on the machine's disk only what the guests write. No blocks reserved for
    // root (the agent runs as root here): what statfs says is available is what QEMU can write.
    execFileSync('truncate', ['-s', '10G', fsImage]);
    execFileSync('mkfs.ext4', ['-q', '-F', '-m', '0', fsImage]);
    mkdirSync(diskDir);
    execFileSync('mount', ['-o', 'loop', fsImage, diskDir]);
    await listeningFleetDaemon();
    agent = await startNodeAgent(pubkey, '1');
  });

  afterAll(async () => {
    await stopAllDaemons();
    killQemusUnder(workDir);
    // Lazily: a killed QEMU may still hold its disk a moment. The loop device goes with the
    // mount (autoclear), the image with the scratch folder.
    if (existsSync(join(diskDir, 'lost+found'))) execFileSync('umount', ['-l', diskDir]);
  });

  it("counts each disk at its virtual size: two fit, a third is refused (422) naming the node's room; a guest filling its disk gets ENOSPC and its neighbour keeps writing", async () => {
    const createdAt = Date.now();
    for (const name of ['writer', 'neighbour'] as const) {
      // The writer asks for its disk's size (the image's 4 GiB), the neighbour takes the default.
      const response = await createVm({
        vm_type: name,
        ram_mb: 512,
        vcpu_count: 1,
        ...(name === 'writer' ? { disk_gb: 4 } : {}),
      });
      expect(response.status).toBe(201);
      guests[name].vmId = ((await response.json()) as { vm_id: string }).vm_id;
    }
    const third = await createVm({ vm_type: 'third', ram_mb: 512, vcpu_count: 1 });
    expect(third.status).toBe(422);
    expect(((await third.json()) as { message: string }).message).toMatch(
      /^node disk-node refused the VM: disk_gb: 4\.0 GiB does not fit in this node's disk room: [\d.]+ GiB committable of [\d.]+ GiB room in VM_DISK_DIR \(reserve [\d.]+ [GM]iB, 8\.0 GiB committed to 2 other VM disk\(s\)\)$/,
    );
    for (const name of ['writer', 'neighbour'] as const) {
      const { vmId } = guests[name];
      guests[name].port = sshPortOf(await listed(vmId, 'Running'));
      await sshOnceUp(key, WG_IP, guests[name].port, 'true', {
        since: createdAt,
        deadlineMs: GUEST_SSH_DEADLINE_MS,
        serialLog: join(diskDir, 'run', vmId, 'serial.log'),
      });
    }

    // The neighbour writes 16 MB at a time, synced, the whole while; the writer fills its disk.
    await inGuest(
      'neighbour',
      "nohup sh -c 'i=0; while [ ! -e /var/tmp/stop ]; do dd if=/dev/urandom of=/var/tmp/n$((i % 4)) bs=1M count=16 conv=fsync 2>/dev/null && i=$((i + 1)) && echo $i > /var/tmp/count; done' > /dev/null 2>&1 &",
    );
    const fillFrom = Date.now();
    await inGuest(
      'writer',
      // Its log on the guest's tmpfs: its disk will have no room for it.
      "nohup sh -c 'dd if=/dev/zero of=/var/tmp/fill bs=1M conv=fsync; echo dd-exit=$?' > /dev/shm/fill.log 2>&1 &",
    );
    const filled = await eventually(
      "the writer's dd to end",
      async () => {
        const log = await inGuest('writer', 'cat /dev/shm/fill.log');
        return log.includes('dd-exit=') ? log : undefined;
      },
      240_000,
      2_000,
    );
    expect(filled).toContain('No space left on device');
    expect(filled).toContain('dd-exit=1');
    const fillMs = Date.now() - fillFrom;
    const writesBefore = Number(await inGuest('neighbour', 'cat /var/tmp/count'));
    await eventually(
      'the neighbour to write again after the writer filled its disk',
      async () =>
        Number(await inGuest('neighbour', 'cat /var/tmp/count')) > writesBefore + 2
          ? true
          : undefined,
      30_000,
      500,
    );
    await inGuest('neighbour', 'touch /var/tmp/stop');
    // Neither was paused: both run, and the writer still answers.
    await listed(guests.writer.vmId, 'Running', 1_000);
    await listed(guests.neighbour.vmId, 'Running', 1_000);
    expect(await inGuest('writer', 'echo alive')).toBe('alive\n');
    expect(await pausedGauge()).toBe(0);
    const written = Number(await inGuest('writer', 'stat -c %s /var/tmp/fill'));
    console.log(
      `disk room: the writer wrote ${Math.round(written / MIB)} MiB to ENOSPC in ${fillMs} ms`,
    );
  });

  it('with thin provisioning, admits beyond the room; a full file system pauses the VM that writes (Error, the reason, counted), and the agent resumes it once there is room', async () => {
    expect((await agent.stop()).code).toBe(0);
    agent = await startNodeAgent(pubkey, '2');
    const third = await createVm({ vm_type: 'third', ram_mb: 512, vcpu_count: 1 });
    expect(third.status).toBe(201);
    const thirdId = ((await third.json()) as { vm_id: string }).vm_id;
    expect((await fetch(`${FLEET_URL}/v1/vms/${thirdId}`, { method: 'DELETE' })).status).toBe(204);

    // Something else fills VM_DISK_DIR (thin provisioning bet wrong): 32 MiB are left.
    const space = statfsSync(diskDir);
    const filler = join(diskDir, 'filler');
    execFileSync('fallocate', ['-l', String(space.bavail * space.bsize - 32 * MIB), filler]);
    const { vmId } = guests.neighbour;
    await inGuest(
      'neighbour',
      "nohup sh -c 'dd if=/dev/urandom of=/var/tmp/big bs=1M count=256 conv=fsync; echo big-exit=$?' > /var/tmp/big.log 2>&1 &",
    );
    await listed(vmId, 'Error', 60_000);
    const vms = await ppnFleet(['vms']);
    expect(vms.stdout).toMatch(
      new RegExp(`${vmId}[^\\n]*Error: paused: disk full on ${NODE_ID} \\(VM_DISK_DIR has no room`),
    );
    expect(await pausedGauge()).toBeGreaterThanOrEqual(1);
    await agent.waitForOutput(
      new RegExp(
        `vm ${vmId}: paused by its hypervisor on a failed write: VM_DISK_DIR on node ${NODE_ID} is full`,
      ),
      5_000,
    );
    const start = await ppnFleet(['vm', 'start', vmId]);
    expect(start.code).not.toBe(0);
    expect(start.stderr).toContain(`vm ${vmId} is paused: VM_DISK_DIR on node ${NODE_ID} is full`);

    // Room again, and no operator: the agent resumes it, its write completes.
    const freedAt = Date.now();
    await rm(filler);
    await agent.waitForOutput(
      new RegExp(`vm ${vmId}: resumed \\(VM_DISK_DIR on node ${NODE_ID} has room again\\)`),
      10_000,
    );
    await listed(vmId, 'Running', 10_000);
    const resumedMs = Date.now() - freedAt;
    expect(resumedMs).toBeLessThan(10_000);
    const big = await eventually(
      'the paused write to complete',
      async () => {
        const log = await inGuest('neighbour', 'cat /var/tmp/big.log');
        return log.includes('big-exit=') ? log : undefined;
      },
      60_000,
      1_000,
    );
    expect(big).toContain('big-exit=0');
    expect(await inGuest('neighbour', 'stat -c %s /var/tmp/big')).toBe(`${256 * MIB}\n`);
    expect(await pausedGauge()).toBe(0);
    console.log(`disk room: paused VM listed Running ${resumedMs} ms after room was freed`);
  });
});
