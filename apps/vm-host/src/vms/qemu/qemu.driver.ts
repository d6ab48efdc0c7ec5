import { Injectable, Logger } from '@nestjs/common';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { HYPERVISOR_OVERHEAD_MB, TCG_OVERHEAD_MB, type HostPort } from '@app/fleet-domain';
import { VmHostConfig } from '../../config/vm-host.config';
import { HostFactsService } from '../../host-facts/host-facts.service';
import { ProcessTable } from '../../host-facts/process-table';
import { CrashFailpoint } from '../failpoints/crash-failpoint';
import {
  DriverRecord,
  FoundVm,
  StartedVm,
  VmDriver,
  VmPlan,
  VmRunState,
  VmSpec,
} from '../vm-driver';
import { VmFiles } from '../files/vm-files';
import {
  VmCreateError,
  VmCreationUnavailableError,
  VmPortTakenError,
  messageOf,
} from '../vms.errors';
import { firstTakenPort } from '../ports/port-probe';
import { makeSeedIso } from './cloud-init';
import { BROKEN_RUN_STATES, KvmStarts } from './kvm-starts';
import { COPY_QMP_SOCKET, SERIAL_SOCKET, QemuAccel, QemuLaunch } from './qemu-command-line';
import { GuestIsolation } from '../network/guest-isolation';
import { QemuImages } from './qemu-images';
import { QemuProcesses } from './qemu-processes';
import { QmpStatus, withQmp } from './qmp.client';
import { runTool } from './run-tool';
import {
  AcceleratedRun,
  LONGEST_VM_ID,
  MAX_SOCKET_PATH,
  QemuRecord,
  qemuRecord,
  step,
} from './qemu-record';
import { capSerialLog } from './serial-log';
import { launchQemu } from './qemu-launch';
import { foundQemus } from './qemu-found';
import {
  IncomingPin,
  IncomingLaunch,
  launchIncoming,
  runningPinOf,
  sshForwardOf,
} from './qemu-incoming';
import { QemuRunFiles } from './qemu-record';
import {
  QMP_TIMEOUT_MS,
  QemuStopping,
  STOP_GRACE_MS,
  killQemu,
  powerDownQemu,
  stopQemu,
} from './qemu-stops';

/** QMP's run state of a VM QEMU paused because a write to its disk failed. */
const IO_ERROR_STATUS = 'io-error';
/** See QemuDriver.powerButtonEveryMs. */
const POWER_BUTTON_EVERY_MS = 5_000;

/** Starts, watches and stops QEMU virtual machines in VM_DISK_DIR. */
@Injectable()
export class QemuDriver extends VmDriver {
  private readonly logger = new Logger('QemuDriver');
  private readonly images: QemuImages;
  private readonly qemus: QemuProcesses;
  private readonly paths: QemuRunFiles;
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
    this.paths = new QemuRunFiles(files);
    this.images = new QemuImages(config.baseImage, files);
    this.qemus = new QemuProcesses(processes, (vmId) => this.paths.pidFile(vmId));
  }

  /** The VM's serial console log (QEMU appends to it; see capConsoleLog). */
  consoleLog(vmId: string): string {
    return this.paths.serialLog(vmId);
  }

  override consoleSocket(vmId: string): string {
    return join(this.files.runDir(vmId), SERIAL_SOCKET);
  }

  /**
   * Past SERIAL_LOG_MAX_BYTES, the log is cut to its last MAX_CONSOLE_BYTES (QEMU appends to
   * it, so its next line lands after them); a follower of the console sees it start over.
   */
  async capConsoleLog(vmId: string): Promise<void> {
    await capSerialLog(this.paths.serialLog(vmId), vmId, this.logger);
  }

  /** Under TCG, QEMU's translation cache too (bounded by qemuArgs to TCG_TRANSLATION_CACHE_MB). */
  override overheadMb(record: DriverRecord): number {
    return qemuRecord(record).accel === 'tcg' ? TCG_OVERHEAD_MB : HYPERVISOR_OVERHEAD_MB;
  }

  checkDiskDir(): void {
    const longest = join(this.files.runDir(LONGEST_VM_ID), COPY_QMP_SOCKET);
    if (Math.max(longest.length, this.paths.qmpSocket(LONGEST_VM_ID).length) > MAX_SOCKET_PATH) {
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
        iso: this.paths.seedIso(vmId),
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
    const forwards = spec.forwards ?? [
      await sshForwardOf(this.config.wgIp, this.logger, vmId, keepPorts),
    ];
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
        seedIso: this.paths.seedIso(vmId),
        qmpSocket: this.paths.qmpSocket(vmId),
        pidFile: this.paths.pidFile(vmId),
        serialLog: this.paths.serialLog(vmId),
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

  /** A VM moved in live, waiting paused for its migration (qemu-incoming.ts). */
  startIncoming(spec: VmSpec, pin: IncomingPin): Promise<StartedVm> {
    const launching: IncomingLaunch = {
      wgIp: this.config.wgIp,
      files: this.files,
      paths: this.paths,
      launch: (launch) => this.launch(launch),
    };
    return launchIncoming(launching, spec, pin);
  }

  /** The accelerator and CPU model a VM's QEMU runs with; none: gone. */
  runningPin(vmId: string): Promise<{ accel: QemuAccel; cpu: string } | undefined> {
    return runningPinOf(this.qemus, vmId);
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
    await withQmp(this.paths.qmpSocket(vmId), QMP_TIMEOUT_MS, (qmp) => qmp.execute('cont'));
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
    return foundQemus(this.qemus, this.guestNetwork, vmIds);
  }

  /**
   * QMP quit, then SIGTERM, then SIGKILL, each after a short grace, to the record's pid and to
   * every QEMU found by the VM's name (see stopQemu).
   */
  async stop(vmId: string, record: DriverRecord): Promise<void> {
    await stopQemu(this.stopping(vmId), qemuRecord(record).pid);
  }

  /** SIGKILL at once to the record's QEMU and every one found by the VM's name (fencing). */
  override async kill(vmId: string, record: DriverRecord): Promise<void> {
    await killQemu({ vmId, qemus: this.qemus }, qemuRecord(record).pid);
  }

  /**
   * How often the ACPI power button is pressed again while the guest has not powered down: a
   * guest still booting misses a press (the project's image answers SSH before logind watches
   * the button), and nothing in ACPI queues one. A guest already shutting down ignores the rest.
   */
  powerButtonEveryMs = POWER_BUTTON_EVERY_MS;

  /** Grace after QMP quit, then again after SIGTERM, before stop SIGKILLs a QEMU (a unit test shortens it). */
  stopGraceMs = STOP_GRACE_MS;

  /** ACPI power-down, pressed again every powerButtonEveryMs, up to `withinMs` (see powerDownQemu). */
  async powerDown(vmId: string, record: DriverRecord, withinMs: number): Promise<boolean> {
    return powerDownQemu(
      this.stopping(vmId),
      qemuRecord(record).pid,
      withinMs,
      this.powerButtonEveryMs,
    );
  }

  private stopping(vmId: string): QemuStopping {
    return {
      vmId,
      qemus: this.qemus,
      logger: this.logger,
      qmpSocket: this.paths.qmpSocket(vmId),
      stopGraceMs: this.stopGraceMs,
    };
  }

  /**
   * system_reset, then cont when QEMU is left paused (a VM paused on an I/O error is reset into
   * QEMU's prelaunch state, where its guest never runs until told).
   */
  async reset(vmId: string): Promise<void> {
    await withQmp(this.paths.qmpSocket(vmId), QMP_TIMEOUT_MS, async (qmp) => {
      await qmp.execute('system_reset');
      const status = (await qmp.execute('query-status')) as QmpStatus;
      if (!status.running) await qmp.execute('cont');
    });
  }

  private launch(launch: QemuLaunch): Promise<number> {
    return launchQemu(launch, {
      previousSerialLog: this.paths.previousSerialLog(launch.vmId),
      runDir: this.files.runDir(launch.vmId),
      guestNetwork: this.guestNetwork,
      failpoint: this.failpoint,
      logger: this.logger,
    });
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
      this.paths.qmpSocket(vmId),
      QMP_TIMEOUT_MS,
      async (qmp) => (await qmp.execute('query-status')) as QmpStatus,
    );
  }
}
