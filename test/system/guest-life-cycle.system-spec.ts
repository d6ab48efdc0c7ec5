import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
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
import { GUEST_SSH_DEADLINE_MS, sshOnceUp } from '../support/guest-ssh';
import { ppnFleet } from '../support/ppn-fleet-cli';
import { killQemusUnder, liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * A real guest (the Debian image) through a power cut and an operator's stop, start and
 * restart with the built ppn-fleet: its disk, its files and its host key outlive
 * them; the guest powers down when asked (ACPI); its console shows its boot.
 */
jest.setTimeout(2 * GUEST_SSH_DEADLINE_MS + 180_000);

const NODE_ID = 'guest-lc-node';
const WG_IP = '127.0.0.1';
const workDir = scratchFolder('guest-life-cycle-');
const diskDir = join(workDir, 'disks');
const key = join(workDir, 'id_ed25519');

interface ListedVm {
  vm_id: string;
  state: string;
  host_ports: Array<{ host_port: number; guest_port: number }>;
}

function startNodeAgent(pubkey: string): Promise<Daemon> {
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
      // The product's default: on a host whose KVM fails, each agent's first start goes through
      // the KVM attempt and its fallback to TCG.
      VM_ACCEL: 'auto',
    }),
  );
}

async function listed(vmId: string, state: string, timeoutMs = 30_000): Promise<ListedVm> {
  return eventually(
    `${vmId} listed ${state}`,
    async () =>
      (await getJson<ListedVm[]>('/v1/vms')).find((vm) => vm.vm_id === vmId && vm.state === state),
    timeoutMs,
    200,
  );
}

function qemuPids(vmId: string): number[] {
  return liveQemusUnder(workDir)
    .filter(({ args }) => args.includes(`guest=${vmId}`))
    .map(({ pid }) => pid);
}

describe('a real guest through a power cut, a stop, a start and a restart', () => {
  let agent: Daemon;
  let pubkey: string;

  beforeAll(async () => {
    if (!existsSync(guestImagePath())) {
      throw new Error(
        `no guest image ${guestImagePath()}: npm run test:system builds it as root, or: ${guestImageBuildCommand()}`,
      );
    }
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'guest-lc', '-f', key]);
    pubkey = readFileSync(`${key}.pub`, 'utf8').trim();
    await listeningFleetDaemon();
    agent = await startNodeAgent(pubkey);
  });

  afterAll(async () => {
    await stopAllDaemons();
    killQemusUnder(workDir);
  });

  it('keeps its files and host key across a power cut; ppn-fleet stops it (ACPI), it stays stopped across an agent restart, starts, restarts in a new process, and shows its console', async () => {
    const createdAt = Date.now();
    const created = await ppnFleet([
      'vm',
      'create',
      '--type',
      'lc',
      '--ram',
      '512',
      '--vcpus',
      '1',
      '--json',
    ]);
    expect(created.code).toBe(0);
    const vmId = (JSON.parse(created.stdout) as { vm_id: string }).vm_id;
    const vm = await listed(vmId, 'Running');
    const sshPort = vm.host_ports.find(({ guest_port }) => guest_port === 22)!.host_port;
    const serialLog = join(diskDir, 'run', vmId, 'serial.log');
    const hostKey = 'cat /etc/ssh/ssh_host_ed25519_key.pub';
    const before = await sshOnceUp(
      key,
      WG_IP,
      sshPort,
      `echo kept > ~/marker && sync && ${hostKey}`,
      {
        since: createdAt,
        deadlineMs: GUEST_SSH_DEADLINE_MS,
        serialLog,
      },
    );

    const consoleRun = await ppnFleet(['vm', 'console', vmId]);
    expect(consoleRun.code).toBe(0);
    expect(consoleRun.stdout).toMatch(/Linux version|login:|vm-fleet-seed|cloud-init/);
    expect(consoleRun.stdout).not.toContain(String.fromCharCode(0x1b));

    // The power cut: agent and QEMU killed at once; the agent started again, as systemd would.
    const [pid] = qemuPids(vmId);
    agent.process.kill('SIGKILL');
    process.kill(pid, 'SIGKILL');
    await agent.waitForExit();
    const cutAt = Date.now();
    agent = await startNodeAgent(pubkey);
    const again = await listed(vmId, 'Running');
    expect(again.host_ports).toEqual(vm.host_ports);
    const after = await sshOnceUp(key, WG_IP, sshPort, `cat ~/marker && ${hostKey}`, {
      since: cutAt,
      deadlineMs: GUEST_SSH_DEADLINE_MS,
      serialLog,
    });
    // Its file is there, and its host key was not made again.
    expect(after).toBe(`kept\n${before}`);

    const stopped = await ppnFleet(['vm', 'stop', vmId, '--wait'], {}, 120_000);
    expect(stopped.code).toBe(0);
    await agent.waitForOutput(new RegExp(`vm ${vmId} powered down`), 5_000);
    expect(qemuPids(vmId)).toEqual([]);
    expect(existsSync(join(diskDir, 'disks', `${vmId}.qcow2`))).toBe(true);
    await listed(vmId, 'Stopped');
    const twice = await ppnFleet(['vm', 'stop', vmId]);
    expect(twice.code).not.toBe(0);
    expect(twice.stderr).toContain(vmId);
    expect(twice.stderr).toMatch(/already stopped/);

    // Stays stopped across an agent restart.
    expect((await agent.stop()).code).toBe(0);
    // Enrolled: its start-up reconciliation, which starts what should run, is done.
    agent = await startNodeAgent(pubkey);
    await listed(vmId, 'Stopped');
    expect(qemuPids(vmId)).toEqual([]);

    const started = await ppnFleet(['vm', 'start', vmId, '--wait-running'], {}, 120_000);
    expect(started.code).toBe(0);
    await listed(vmId, 'Running');
    const [startedPid] = qemuPids(vmId);
    expect(startedPid).toBeDefined();

    const restarted = await ppnFleet(
      ['vm', 'restart', vmId, '--timeout', '15', '--wait-running'],
      {},
      120_000,
    );
    expect(restarted.code).toBe(0);
    await listed(vmId, 'Running');
    const [restartedPid] = qemuPids(vmId);
    expect(restartedPid).toBeDefined();
    expect(restartedPid).not.toBe(startedPid);

    expect((await fetch(`${FLEET_URL}/v1/vms/${vmId}`, { method: 'DELETE' })).status).toBe(204);
  });
});
