import { Injectable, Logger } from '@nestjs/common';
import { chmod, open, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  HYPERVISOR_OVERHEAD_MB,
  MAX_CONSOLE_BYTES,
  TCG_OVERHEAD_MB,
  type HostPort,
} from '@app/fleet-domain';
import { VmHostConfig } from '../../config/vm-host.config';
import { HostFactsService } from '../../host-facts/host-facts.service';
import { ProcessTable } from '../../host-facts/process-table';
import { CrashFailpoint } from '../life-cycle/crash-failpoint';
import {
  DriverRecord,
  FoundVm,
  StartedVm,
  VmDriver,
  VmPlan,
  VmRunState,
  VmSpec,
} from '../vm-driver';
import { PRIVATE_FILE_MODE, VmFiles } from '../files/vm-files';
import {
  VmCreateError,
  VmCreationUnavailableError,
  VmPortTakenError,
  VmStillRunningError,
  messageOf,
} from '../vms.errors';
import { SOCKET_PORT_PROBE, firstTakenPort } from '../ports/port-probe';
import { makeSeedIso } from './cloud-init';
import { BROKEN_RUN_STATES, KvmStarts } from './kvm-starts';
import {
  COPY_QMP_SOCKET,
  SERIAL_SOCKET,
  QemuAccel,
  KvmCpuModel,
  QemuLaunch,
  SSH_GUEST_PORT,
  accelOf,
  forwardedPorts,
  optionOf,
  qemuArgs,
  ramMbOf,
  vcpuCountOf,
} from './qemu-command-line';
import { GuestIsolation } from '../network/guest-isolation';
import { QemuImages } from './qemu-images';
import { QemuProcesses } from './qemu-processes';
import { QmpStatus, withQmp } from './qmp.client';
import { runTool } from './run-tool';

/** QMP's run state of a VM QEMU paused because a write to its disk failed. */
const IO_ERROR_STATUS = 'io-error';
/** See QemuDriver.powerButtonEveryMs. */
const POWER_BUTTON_EVERY_MS = 5_000;
const QMP_TIMEOUT_MS = 2_000;
/** A VM's console log past this is cut to its last part (see capConsoleLog). */
export const SERIAL_LOG_MAX_BYTES = 8 * 1024 * 1024;
/** Grace after QMP quit, then again after SIGTERM, before SIGKILL. */
const STOP_GRACE_MS = 1_500;
/** How long a SIGKILLed QEMU may take to be gone (a process in uninterruptible I/O). */
const KILL_GRACE_MS = 5_000;
/** How long QEMU may take to daemonize. */
const LAUNCH_TIMEOUT_MS = 60_000;
/** Longest path a unix socket may have on Linux, less its terminating NUL. */
const MAX_SOCKET_PATH = 107;
/** As long as every vm_id VmFiles makes. */
const LONGEST_VM_ID = 'vm-0123456789abcdef';

/** What QemuDriver keeps in a VM's sidecar. */
type QemuRecord = {
  kind: 'qemu';
  accel: QemuAccel;
  /** QEMU's pid once it daemonized; QEMU removes its pidfile on exit, so it is kept here too. */
  pid: number | null;
};

/** The record as stored; a pid that is not a positive integer, or another driver's, is none. */
function qemuRecord(record: DriverRecord): QemuRecord {
  const { pid } = record;
  const known =
    record.kind === 'qemu' && typeof pid === 'number' && Number.isInteger(pid) && pid > 0;
  return { kind: 'qemu', accel: record.accel === 'kvm' ? 'kvm' : 'tcg', pid: known ? pid : null };
}

/** How a launch ended up running the VM. */
interface AcceleratedRun {
  pid: number;
  accel: QemuAccel;
  cpuModel?: KvmCpuModel;
  /** When KVM failed and TCG runs it instead: what failed, for the sidecar. */
  accelFallback?: string;
}

/** Runs one create step, so a failure says which step it was. */
async function step<T>(name: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof VmCreateError) throw error;
    throw new VmCreateError(name, error instanceof Error ? error.message : String(error), {
      cause: error,
    });
  }
}

/** Starts, watches and stops QEMU virtual machines in VM_DISK_DIR. */
@Injectable()
export class QemuDriver extends VmDriver {
  private readonly logger = new Logger('QemuDriver');
  private readonly images: QemuImages;
  private readonly qemus: QemuProcesses;
  /** This process's memory of KVM: the CPU model that starts here, whether it ran a guest. */
  private readonly kvm = new KvmStarts();
  /** VMs whose QEMU is being stopped after KVM stopped their guest (see inspect). */
  private readonly stoppingBroken = new Set<string>();

  constructor(
    private readonly config: VmHostConfig,
    private readonly files: VmFiles,
    private readonly hostFacts: HostFactsService,
    processes: ProcessTable,
    private readonly failpoint: CrashFailpoint,
    private readonly guestNetwork: GuestIsolation,
  ) {
    super();
    this.images = new QemuImages(config.baseImage, files);
    this.qemus = new QemuProcesses(processes, (vmId) => this.pidFile(vmId));
  }

  /** QEMU's files of a VM, all in its run folder. */
  private qmpSocket(vmId: string): string {
    return join(this.files.runDir(vmId), 'qmp.sock');
  }

  private pidFile(vmId: string): string {
    return join(this.files.runDir(vmId), 'qemu.pid');
  }

  private seedIso(vmId: string): string {
    return join(this.files.runDir(vmId), 'seed.iso');
  }

  private serialLog(vmId: string): string {
    return join(this.files.runDir(vmId), 'serial.log');
  }

  /** The serial log of the boot before the current one, kept for a look after a crash. */
  private previousSerialLog(vmId: string): string {
    return join(this.files.runDir(vmId), 'serial.previous.log');
  }

  consoleLog(vmId: string): string {
    return this.serialLog(vmId);
  }

  override consoleSocket(vmId: string): string {
    return join(this.files.runDir(vmId), SERIAL_SOCKET);
  }

  /**
   * Past SERIAL_LOG_MAX_BYTES, the log is cut to its last MAX_CONSOLE_BYTES (QEMU appends to
   * it, so its next line lands after them); a follower of the console sees it start over.
   */
  async capConsoleLog(vmId: string): Promise<void> {
    const log = this.serialLog(vmId);
    const size = await stat(log).then(
      (found) => found.size,
      () => 0,
    );
    if (size <= SERIAL_LOG_MAX_BYTES) return;
    const handle = await open(log, 'r+');
    try {
      const tail = Buffer.alloc(MAX_CONSOLE_BYTES);
      const { bytesRead } = await handle.read(tail, 0, tail.length, size - tail.length);
      await handle.truncate(0);
      await handle.write(tail.subarray(0, bytesRead), 0, bytesRead, 0);
    } finally {
      await handle.close();
    }
    this.logger.warn(
      `vm ${vmId}: console log cut from ${size} bytes to its last ${MAX_CONSOLE_BYTES} bytes`,
    );
  }

  /** Under TCG, QEMU's translation cache too (bounded by qemuArgs to TCG_TRANSLATION_CACHE_MB). */
  override overheadMb(record: DriverRecord): number {
    return qemuRecord(record).accel === 'tcg' ? TCG_OVERHEAD_MB : HYPERVISOR_OVERHEAD_MB;
  }

  checkDiskDir(): void {
    const longest = join(this.files.runDir(LONGEST_VM_ID), COPY_QMP_SOCKET);
    if (Math.max(longest.length, this.qmpSocket(LONGEST_VM_ID).length) > MAX_SOCKET_PATH) {
      throw new Error(`too long: QMP socket paths under it would exceed ${MAX_SOCKET_PATH} bytes`);
    }
  }

  async checkTools(): Promise<void> {
    for (const tool of ['qemu-system-x86_64', 'qemu-img', 'genisoimage']) {
      try {
        await runTool(tool, ['--version'], 5_000);
      } catch {
        this.logger.warn(
          `${tool} not found: VMs cannot be created on this node until it is installed`,
        );
      }
    }
  }

  /**
   * Needs the base image now, and KVM under VM_ACCEL=kvm. prefer_kvm steers placement only:
   * the VM runs under KVM whenever VM_ACCEL allows and KVM is usable (see accelNow).
   */
  async plan(_options: { preferKvm: boolean }): Promise<VmPlan> {
    await this.images.base();
    const accel = await this.accelNow();
    const record: QemuRecord = { kind: 'qemu', accel, pid: null };
    return { record, summary: accel };
  }

  override accel(record: DriverRecord): QemuAccel {
    return qemuRecord(record).accel;
  }

  /**
   * What a VM is started under now, decided again at each start: VM_ACCEL=tcg, TCG; kvm, KVM
   * (its device must be usable); auto, KVM while usable (the device opens, VM_ACCEL allows it
   * and it has not failed at run time in this process), else TCG.
   */
  private async accelNow(): Promise<QemuAccel> {
    if (this.config.accel === 'tcg') return 'tcg';
    if (this.config.accel === 'auto') return (await this.hostFacts.kvmUsable()) ? 'kvm' : 'tcg';
    if (!(await this.hostFacts.kvmDeviceUsable())) {
      throw new VmCreationUnavailableError(
        'VM_ACCEL=kvm and KVM cannot be used on this node (its device cannot be opened read-write); no VM can be made',
      );
    }
    return 'kvm';
  }

  /** A qcow2 overlay on the base image, then a cloud-init seed ISO, both private to the agent. */
  async makeFiles(spec: VmSpec): Promise<void> {
    const { vmId } = spec;
    await step('disk', async () => {
      // A restored disk is the copy's data: never replaced by a blank overlay.
      if (spec.restoredDisk) return void (await stat(this.files.disk(vmId)));
      await this.images.overlay(vmId, await this.images.base(), spec.diskGb);
    });
    this.failpoint.reached('after-disk', vmId);
    await step('seed ISO', () =>
      makeSeedIso({
        vmId,
        vmType: spec.vmType,
        sshPubkey: this.config.sshPubkey,
        workDir: this.files.runDir(vmId),
        iso: this.seedIso(vmId),
      }),
    );
    this.failpoint.reached('after-seed', vmId);
  }

  /**
   * QEMU daemonized on the VM's files, its forwards on VM_WG_IP: exactly the VM's own (one
   * taken now fails the start, naming it), or for a VM admitted before published ports, SSH from
   * the port it had before when that is still free.
   */
  async start(
    spec: VmSpec,
    record: DriverRecord,
    keepPorts: readonly HostPort[] = [],
  ): Promise<StartedVm> {
    const { vmId } = spec;
    const forwards = spec.forwards ?? [await this.sshForward(vmId, keepPorts)];
    if (spec.forwards) {
      const taken = await firstTakenPort(this.config.wgIp, forwards);
      if (taken) throw new VmPortTakenError(taken, this.config.wgIp);
    }
    return step('QEMU', async () => {
      const run = await this.launchAccelerated({
        vmId,
        ramMb: spec.ramMb,
        vcpuCount: spec.vcpuCount,
        accel: await this.accelNow(),
        disk: this.files.disk(vmId),
        seedIso: this.seedIso(vmId),
        qmpSocket: this.qmpSocket(vmId),
        pidFile: this.pidFile(vmId),
        serialLog: this.serialLog(vmId),
        forwardAddress: this.config.wgIp,
        forwards,
      });
      const { pid, accel, cpuModel, accelFallback } = run;
      const started: QemuRecord = { kind: 'qemu', accel, pid };
      return {
        record: started,
        hostPorts: [...forwards],
        summary: `QEMU pid ${pid}, ${accel}${cpuModel ? ` (CPU ${cpuModel})` : ''}, ssh on ${this.config.wgIp}:${forwards[0].host_port}${forwards.length > 1 ? `, ${forwards.length - 1} more port(s)` : ''}`,
        ...(accelFallback === undefined ? {} : { accelFallback }),
      };
    });
  }

  /**
   * A VM moved in live (apps/vm-host/src/moves/): QEMU on its files as `start` runs it, but on
   * the source's machine type, accelerator and CPU model, waiting paused for its migration.
   */
  async startIncoming(
    spec: VmSpec,
    pin: { machine: string; accel: QemuAccel; cpuModel?: KvmCpuModel },
  ): Promise<StartedVm> {
    const { vmId } = spec;
    const forwards = spec.forwards ?? [];
    const taken = await firstTakenPort(this.config.wgIp, forwards);
    if (taken) throw new VmPortTakenError(taken, this.config.wgIp);
    const pid = await step('QEMU', () =>
      this.launch({
        vmId,
        ramMb: spec.ramMb,
        vcpuCount: spec.vcpuCount,
        accel: pin.accel,
        ...(pin.cpuModel === undefined ? {} : { cpuModel: pin.cpuModel }),
        machine: pin.machine,
        incoming: true,
        disk: this.files.disk(vmId),
        seedIso: this.seedIso(vmId),
        qmpSocket: this.qmpSocket(vmId),
        pidFile: this.pidFile(vmId),
        serialLog: this.serialLog(vmId),
        forwardAddress: this.config.wgIp,
        forwards,
      }),
    );
    const record: QemuRecord = { kind: 'qemu', accel: pin.accel, pid };
    return { record, hostPorts: [...forwards], summary: `QEMU pid ${pid}, ${pin.accel}, incoming` };
  }

  /** The accelerator and CPU model a VM's QEMU runs with, from its command line; none: gone. */
  async runningPin(vmId: string): Promise<{ accel: QemuAccel; cpu: string } | undefined> {
    const [first] = (await this.qemus.of([vmId])).get(vmId) ?? [];
    if (!first) return undefined;
    // Under TCG qemuArgs names no CPU: QEMU's default for x86_64, qemu64.
    return { accel: accelOf(first.args), cpu: optionOf(first.args, '-cpu') ?? 'qemu64' };
  }

  /** A VM admitted before published ports: SSH from the port it had when still free, else a new one. */
  private async sshForward(vmId: string, keepPorts: readonly HostPort[]): Promise<HostPort> {
    const kept = keepPorts.find(
      (port) => port.guest_port === SSH_GUEST_PORT && port.protocol === 'tcp',
    )?.host_port;
    const wgIp = this.config.wgIp;
    const sshPort = await step('QEMU', async () =>
      kept !== undefined && (await SOCKET_PORT_PROBE.isFree(wgIp, kept, 'tcp'))
        ? kept
        : SOCKET_PORT_PROBE.anyFree(wgIp, 'tcp'),
    );
    if (kept !== undefined && kept !== sshPort) {
      this.logger.warn(`vm ${vmId}: host port ${kept} is taken now; ssh forwarded from ${sshPort}`);
    }
    return { host_port: sshPort, guest_port: SSH_GUEST_PORT, protocol: 'tcp' };
  }

  /** QEMU's own view over QMP, once its pid is known to be this VM's live QEMU. */
  async inspect(vmId: string, record: DriverRecord): Promise<VmRunState> {
    const { pid } = qemuRecord(record);
    if (pid === null || !(await this.qemus.isAlive(pid, vmId))) return 'stopped';
    try {
      const status = await this.status(vmId);
      if (BROKEN_RUN_STATES.includes(status.status)) this.brokenGuest(vmId, record, status.status);
      // Paused by QEMU on a failed write (werror's default stops on ENOSPC): alive, not stopped.
      if (status.status === IO_ERROR_STATUS) return 'io-error';
      return status.running ? 'running' : 'stopped';
    } catch {
      // Alive but QMP not answering (yet): not known to run.
      return 'unknown';
    }
  }

  async imageDiskBytes(): Promise<number> {
    return this.images.virtualBytes(await this.images.base());
  }

  /** QMP cont: QEMU tries the failed write again, and pauses again if it fails again. */
  async resume(vmId: string): Promise<void> {
    await withQmp(this.qmpSocket(vmId), QMP_TIMEOUT_MS, (qmp) => qmp.execute('cont'));
  }

  /**
   * A guest that stopped for good under KVM after its start (QMP internal-error; guest-panicked):
   * its QEMU is stopped so the restart policy starts the VM again from its disk, on its ports.
   * Before KVM has run any guest in this process, that is KVM failing on this host: it is marked
   * failed at run time and the VM comes back under TCG (VM_ACCEL=auto). After, it is this guest's
   * own doing (a guest can fault KVM on purpose), which must not turn the whole node to TCG.
   */
  private brokenGuest(vmId: string, record: DriverRecord, status: string): void {
    if (qemuRecord(record).accel !== 'kvm' || this.stoppingBroken.has(vmId)) return;
    const reason = `guest stopped under KVM with QMP status ${status}`;
    if (!this.kvm.hasRunAGuest) this.hostFacts.kvmFailed(`vm ${vmId}: ${reason}`);
    this.logger.warn(`vm ${vmId}: ${reason}; stopping its QEMU to start it again`);
    this.stoppingBroken.add(vmId);
    void this.stop(vmId, record)
      .catch((error: unknown) => {
        this.logger.error(`vm ${vmId}: could not stop its QEMU: ${messageOf(error)}`);
      })
      .finally(() => this.stoppingBroken.delete(vmId));
  }

  /** QEMU processes whose command line names one of these VMs and its pidfile under VM_DISK_DIR. */
  async find(vmIds: readonly string[]): Promise<Map<string, FoundVm>> {
    const found = new Map<string, FoundVm>();
    for (const [vmId, processes] of await this.qemus.of(vmIds)) {
      const [first] = processes;
      await this.guestNetwork.enclose(
        vmId,
        processes.map(({ pid }) => pid),
      );
      const accel = accelOf(first.args);
      const record: QemuRecord = { kind: 'qemu', accel, pid: first.pid };
      found.set(vmId, {
        record,
        hostPorts: forwardedPorts(first.args),
        rssMb: await this.qemus.residentMb(processes),
        ramMb: ramMbOf(first.args),
        vcpuCount: vcpuCountOf(first.args),
        summary: `QEMU pid ${processes.map(({ pid }) => pid).join(', ')}, ${accel}`,
      });
    }
    return found;
  }

  /**
   * QMP quit, then SIGTERM, then SIGKILL, each after a short grace, to the record's pid and to
   * every QEMU found by the VM's name (one started by an agent killed before it wrote the pid).
   */
  async stop(vmId: string, record: DriverRecord): Promise<void> {
    const pids = new Set<number>();
    const { pid } = qemuRecord(record);
    if (pid !== null && (await this.qemus.isAlive(pid, vmId))) pids.add(pid);
    for (const found of (await this.qemus.of([vmId])).get(vmId) ?? []) {
      if (!pids.has(found.pid)) {
        this.logger.warn(`vm ${vmId}: stopping QEMU pid ${found.pid}, found by name`);
        pids.add(found.pid);
      }
    }
    if (pids.size === 0) return;
    let asked = false;
    try {
      await withQmp(this.qmpSocket(vmId), QMP_TIMEOUT_MS, (qmp) => {
        asked = true;
        return qmp.execute('quit');
      });
    } catch {
      // QEMU may close the socket as it quits; the wait below tells. No socket: no grace.
    }
    let alive = asked ? await this.qemus.survivors([...pids], vmId, STOP_GRACE_MS) : [...pids];
    if (alive.length === 0) return;
    for (const survivor of alive) this.qemus.signal(survivor, 'SIGTERM');
    alive = await this.qemus.survivors(alive, vmId, STOP_GRACE_MS);
    if (alive.length === 0) return;
    this.logger.warn(
      `vm ${vmId}: QEMU pid ${alive.join(', ')} ignored quit and SIGTERM; killing it`,
    );
    for (const survivor of alive) this.qemus.signal(survivor, 'SIGKILL');
    alive = await this.qemus.survivors(alive, vmId, KILL_GRACE_MS);
    if (alive.length > 0) {
      throw new VmStillRunningError(
        `vm ${vmId}: QEMU pid ${alive.join(', ')} still runs after quit, SIGTERM and SIGKILL; the VM is kept`,
      );
    }
  }

  /**
   * How often the ACPI power button is pressed again while the guest has not powered down: a
   * guest still booting misses a press (the project's image answers SSH before logind watches
   * the button), and nothing in ACPI queues one. A guest already shutting down ignores the rest.
   */
  powerButtonEveryMs = POWER_BUTTON_EVERY_MS;

  /**
   * Asks the guest to power down over QMP (system_powerdown: the ACPI power button), again every
   * powerButtonEveryMs, and waits up to `withinMs` for its QEMU to end, which it does once the
   * guest has shut down.
   */
  async powerDown(vmId: string, record: DriverRecord, withinMs: number): Promise<boolean> {
    const { pid } = qemuRecord(record);
    if (pid === null || !(await this.qemus.isAlive(pid, vmId))) return true;
    const deadline = Date.now() + withinMs;
    let pressed = false;
    let refusal = '';
    for (;;) {
      try {
        // Never past the deadline waiting on QMP either.
        const qmpMs = Math.max(1, Math.min(QMP_TIMEOUT_MS, deadline - Date.now()));
        await withQmp(this.qmpSocket(vmId), qmpMs, (qmp) => qmp.execute('system_powerdown'));
        pressed = true;
      } catch (error) {
        // QMP busy, or QEMU ending: the wait below tells, and the next press tries again.
        refusal = error instanceof Error ? error.message : String(error);
      }
      const waitMs = Math.max(0, Math.min(this.powerButtonEveryMs, deadline - Date.now()));
      if ((await this.qemus.survivors([pid], vmId, waitMs)).length === 0) return true;
      if (Date.now() >= deadline) break;
    }
    if (!pressed) this.logger.warn(`vm ${vmId}: ACPI power-down could not be asked: ${refusal}`);
    return false;
  }

  /**
   * system_reset, then cont when QEMU is left paused (a VM paused on an I/O error is reset into
   * QEMU's prelaunch state, where its guest never runs until told).
   */
  async reset(vmId: string): Promise<void> {
    await withQmp(this.qmpSocket(vmId), QMP_TIMEOUT_MS, async (qmp) => {
      await qmp.execute('system_reset');
      const status = (await qmp.execute('query-status')) as QmpStatus;
      if (!status.running) await qmp.execute('cont');
    });
  }

  /**
   * Starts QEMU daemonized; resolves with its pid once it runs in the background. `-daemonize`
   * sets QEMU's umask to 027, so what it creates would be readable by the group: the serial log
   * is made 0600 before (QEMU opens it as it is), the QMP socket made 0600 once it exists (in a
   * 0700 folder meanwhile).
   */
  private async launch(launch: QemuLaunch): Promise<number> {
    await rename(launch.serialLog, this.previousSerialLog(launch.vmId)).catch(() => undefined);
    await writeFile(launch.serialLog, '', { mode: PRIVATE_FILE_MODE });
    await chmod(launch.serialLog, PRIVATE_FILE_MODE);
    // In the guests' cgroup, whose sockets (the guest's user network) the node's firewall knows.
    const { command, args } = await this.guestNetwork.guestCommand(
      'qemu-system-x86_64',
      qemuArgs(launch),
    );
    await runTool(command, args, LAUNCH_TIMEOUT_MS, 'qemu-system-x86_64');
    this.failpoint.reached('after-launch-before-pid-written', launch.vmId);
    const pid = Number((await readFile(launch.pidFile, 'utf8')).trim());
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`unreadable pidfile ${launch.pidFile}`);
    // The copies' and the serial port's sockets too, quietly: the run folder is 0700 anyway.
    for (const socket of [COPY_QMP_SOCKET, SERIAL_SOCKET]) {
      await chmod(join(this.files.runDir(launch.vmId), socket), PRIVATE_FILE_MODE).catch(
        () => undefined,
      );
    }
    await chmod(launch.qmpSocket, PRIVATE_FILE_MODE).catch((error: unknown) => {
      // QEMU runs: not a reason to fail the VM; the run folder is 0700 anyway.
      this.logger.warn(
        `vm ${launch.vmId}: could not make its QMP socket private: ${error instanceof Error ? error.message : String(error)}`,
      );
    });
    return pid;
  }

  /**
   * Launches the VM under TCG, or under KVM through its CPU models (KvmStarts); when KVM cannot
   * start or run it, under TCG on the same files and port (VM_ACCEL=auto: KVM is then marked
   * failed at run time) or not at all (VM_ACCEL=kvm, a VmCreateError with the reason).
   */
  private async launchAccelerated(launch: QemuLaunch): Promise<AcceleratedRun> {
    const { vmId } = launch;
    if (launch.accel === 'tcg') return { pid: await this.launch(launch), accel: 'tcg' };
    const outcome = await this.kvm.start({
      launch: (cpuModel) => this.launch({ ...launch, accel: 'kvm', cpuModel }),
      status: async () => (await this.status(vmId)).status,
      consoleWritten: async () => ((await stat(launch.serialLog).catch(() => null))?.size ?? 0) > 0,
      alive: (pid) => this.qemus.isAlive(pid, vmId),
      stop: (pid) => this.stop(vmId, { kind: 'qemu', accel: 'kvm', pid }),
    });
    if ('pid' in outcome) return { pid: outcome.pid, accel: 'kvm', cpuModel: outcome.cpuModel };
    if (this.config.accel === 'kvm') {
      throw new VmCreateError('QEMU', `${outcome.failure}; VM_ACCEL=kvm: not started under TCG`);
    }
    this.logger.warn(`vm ${vmId}: QEMU: ${outcome.failure}; starting it again under TCG`);
    const pid = await this.launch({ ...launch, accel: 'tcg' });
    // TCG started where KVM did not: KVM's failure, not the VM's files'.
    this.hostFacts.kvmFailed(`vm ${vmId}: ${outcome.failure}`);
    return { pid, accel: 'tcg', accelFallback: `QEMU: ${outcome.failure}; started under TCG` };
  }

  private async status(vmId: string): Promise<QmpStatus> {
    return withQmp(
      this.qmpSocket(vmId),
      QMP_TIMEOUT_MS,
      async (qmp) => (await qmp.execute('query-status')) as QmpStatus,
    );
  }
}
