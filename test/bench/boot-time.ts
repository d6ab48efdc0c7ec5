/**
 * Create → SSH of a real guest, and where the time goes: a 512 MB, 1-vCPU Debian guest (the
 * guest image) created through the controller and an agent, under TCG. Phases, each from the
 * POST:
 *   - POST /v1/vms answered (201);
 *   - QEMU process up (its start time in /proc);
 *   - kernel started, userspace (systemd) started, the network set (vm-fleet-network: QEMU
 *     forwards the SSH port to the guest's address), the seed read (vm-fleet-seed), sshd
 *     started (after both): the guest's own monotonic times
 *     (systemd's, read over SSH afterwards), placed on the host's clock by the guest's uptime
 *     read at a known host time (to within the SSH round trip's last leg, tens of ms);
 *   - SSH banner (the host port answers `SSH-2.0-`, tried every 100 ms);
 *   - first SSH login that runs a command (as the image's user, with the agent's key).
 * With the load average before and after (the machine may be shared), and the CPU time QEMU
 * took until the banner, which the load changes little.
 *
 *   npm run build && ts-node -T -r tsconfig-paths/register test/bench/boot-time.ts
 * (as root, with the guest image built; run.ts calls it too). Prints one JSON line.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import {
  FLEET_URL,
  eventually,
  getJson,
  listeningFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { GUEST_SSH_DEADLINE_MS, sshRun, tailOf } from '../support/guest-ssh';
import { killQemusUnder, liveQemusUnder } from '../support/qemu-processes';
import { startGuestAgent } from './guest-agent';

/** A phase: its name and its time after the POST, in seconds. */
export interface BootPhase {
  phase: string;
  atS: number;
}

export interface BootTime {
  accel: string;
  phases: BootPhase[];
  /**
   * The CPU time QEMU used from its start to the SSH banner: what create → SSH would take on an
   * idle machine, near enough (a TCG guest of one vCPU runs on one host thread), whatever the load.
   */
  qemuCpuS: number;
  /** /proc/loadavg's 1, 5 and 15 minute figures, before the create and once SSH answered. */
  loadBefore: string;
  loadAfter: string;
}

const GUEST_MB = 512;

function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

function hostUptimeS(): number {
  return Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
}

/** A process's /proc/<pid>/stat fields after its name (field 3 first). */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

const ticksPerS = (): number => Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/** When a process started, in ms of the host's wall clock (its stat's starttime). */
function processStartMs(pid: number): number {
  const startTicks = Number(statFields(pid)[19]);
  return Date.now() - (hostUptimeS() - startTicks / ticksPerS()) * 1000;
}

/** The CPU time a process has used, in s (its stat's utime + stime, all its threads). */
function processCpuS(pid: number): number {
  const fields = statFields(pid);
  return (Number(fields[11]) + Number(fields[12])) / ticksPerS();
}

/**
 * Whether the port answers with an SSH banner within 10 s. Not sooner: each connection sshd
 * accepts costs the booting 1-vCPU guest a re-exec of sshd (a second or more under TCG), and
 * probes abandoned before their banner would pile up and delay the one that is answered.
 */
function sshBanner(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    const done = (banner: boolean) => {
      socket.destroy();
      resolve(banner);
    };
    socket.setTimeout(10_000, () => done(false));
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (received.length >= 8) done(received.startsWith('SSH-2.0-'));
    });
    socket.on('error', () => done(false));
    socket.on('close', () => done(false));
  });
}

/**
 * The guest's systemd times (µs of its monotonic clock) and its uptime, read last. As root
 * (sudo): systemd answers root on its own socket, a user only through D-Bus, which may not run
 * yet when SSH first answers.
 */
const GUEST_TIMES = [
  'sudo -n systemctl show -p InitRDTimestampMonotonic -p UserspaceTimestampMonotonic',
  'echo Seed=$(sudo -n systemctl show -p ActiveEnterTimestampMonotonic --value vm-fleet-seed.service)',
  'echo Sshd=$(sudo -n systemctl show -p ActiveEnterTimestampMonotonic --value ssh.service)',
  'echo Network=$(sudo -n systemctl show -p ActiveEnterTimestampMonotonic --value vm-fleet-network.service)',
  "echo Uptime=$(cut -d' ' -f1 /proc/uptime)",
].join('; ');

/** Measures one create → SSH; expects a controller listening on 9203 already. */
export async function measureBootTime(): Promise<BootTime> {
  const { agent, workDir, key } = await startGuestAgent('bench-boot');
  try {
    const loadBefore = loadAverage();
    const postedAt = Date.now();
    const at = (ms: number) => Math.round(ms - postedAt) / 1000;
    const phases: BootPhase[] = [];
    const response = await fetch(`${FLEET_URL}/v1/vms`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ vm_type: 'bench', ram_mb: GUEST_MB, vcpu_count: 1 }),
    });
    phases.push({ phase: 'POST /v1/vms answered', atS: at(Date.now()) });
    if (response.status !== 201) throw new Error(`create answered ${response.status}`);
    const { vm_id: vmId } = (await response.json()) as { vm_id: string };
    type Listed = { vm_id: string; host_ports: Array<{ host_port: number; guest_port: number }> };
    const vm = await eventually(
      `${vmId} listed with its SSH port`,
      async () =>
        (await getJson<Listed[]>('/v1/vms')).find(
          (listed) =>
            listed.vm_id === vmId && listed.host_ports.some(({ guest_port }) => guest_port === 22),
        ),
      30_000,
      50,
    );
    const qemu = await eventually(
      `${vmId}'s QEMU`,
      () =>
        Promise.resolve(liveQemusUnder(workDir).find(({ args }) => args.includes(`guest=${vmId}`))),
      30_000,
      20,
    );
    const qemuUp = processStartMs(qemu.pid);
    const accel = qemu.args.some((arg) => arg.includes('accel=kvm') || arg.startsWith('kvm'))
      ? 'kvm'
      : 'tcg';
    const port = vm.host_ports.find(({ guest_port }) => guest_port === 22)!.host_port;
    const serialLog = join(workDir, 'disks', 'run', vmId, 'serial.log');

    const bannerAt = await eventually(
      `an SSH banner on port ${port}`,
      async () => ((await sshBanner(port)) ? Date.now() : undefined),
      GUEST_SSH_DEADLINE_MS,
      100,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; its console's last lines:\n${tailOf(serialLog, 20)}`);
    });
    const qemuCpuS = processCpuS(qemu.pid);
    const loginAt = await eventually(
      'an SSH login',
      async () =>
        sshRun(key, '127.0.0.1', port, 'true').then(
          () => Date.now(),
          () => undefined,
        ),
      GUEST_SSH_DEADLINE_MS,
      100,
    );
    const loadAfter = loadAverage();
    const times = await sshRun(key, '127.0.0.1', port, GUEST_TIMES);
    const readAt = Date.now();
    const value = (name: string) => Number(new RegExp(`^${name}=(\\S+)$`, 'm').exec(times)?.[1]);
    // The guest's monotonic 0 (its kernel's start) on the host's clock.
    const kernelAt = readAt - value('Uptime') * 1000;
    // 0: not reached (none of systemd's times is 0 once reached).
    const guest = (name: string) => (value(name) > 0 ? kernelAt + value(name) / 1000 : NaN);
    phases.push(
      { phase: 'QEMU process up', atS: at(qemuUp) },
      { phase: 'kernel started', atS: at(kernelAt) },
      { phase: 'userspace (systemd) started', atS: at(guest('UserspaceTimestampMonotonic')) },
      { phase: 'seed read (vm-fleet-seed)', atS: at(guest('Seed')) },
      { phase: 'sshd started', atS: at(guest('Sshd')) },
      { phase: 'network set (vm-fleet-network)', atS: at(guest('Network')) },
      { phase: 'SSH banner', atS: at(bannerAt) },
      { phase: 'SSH login', atS: at(loginAt) },
    );
    await fetch(`${FLEET_URL}/v1/vms/${vmId}`, { method: 'DELETE' });
    return {
      accel,
      phases: phases.filter(({ atS }) => !isNaN(atS)).sort((a, b) => a.atS - b.atS),
      qemuCpuS,
      loadBefore,
      loadAfter,
    };
  } finally {
    await agent.stop();
    killQemusUnder(workDir);
    rmSync(workDir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  void (async () => {
    try {
      await listeningFleetDaemon();
      console.log(JSON.stringify(await measureBootTime()));
    } finally {
      await stopAllDaemons();
    }
  })();
}
