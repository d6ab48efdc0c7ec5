import { Injectable, Logger } from '@nestjs/common';
import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { HostPort } from '@app/fleet-domain';
import { VmHostConfig } from '../config/vm-host.config';
import { HostFactsService } from '../host-facts/host-facts.service';
import { HostProcess, ProcessTable } from '../host-facts/process-table';
import { CrashFailpoint } from './crash-failpoint';
import { QmpStatus, withQmp } from './qmp.client';
import {
  DriverRecord,
  FoundVm,
  StartedVm,
  VmDriver,
  VmPlan,
  VmRunState,
  VmSpec,
} from './vm-driver';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, VmFiles } from './vm-files';
import { BaseImageMissingError, VmCreateError, VmStillRunningError } from './vms.errors';

const exec = promisify(execFile);

/** Size of the blank base image made when VM_BASE_IMAGE is unset: it boots nothing. */
const BLANK_BASE_IMAGE_SIZE = '1G';
const QMP_TIMEOUT_MS = 2_000;
/** Grace after QMP quit, then again after SIGTERM, before SIGKILL. */
const STOP_GRACE_MS = 1_500;
/** How long a SIGKILLed QEMU may take to be gone (a process in uninterruptible I/O). */
const KILL_GRACE_MS = 5_000;
const SSH_GUEST_PORT = 22;
/** Longest path a unix socket may have on Linux, less its terminating NUL. */
const MAX_SOCKET_PATH = 107;
/** As long as every vm_id VmFiles makes. */
const LONGEST_VM_ID = 'vm-0123456789abcdef';

export interface QemuLaunch {
  vmId: string;
  ramMb: number;
  vcpuCount: number;
  accel: 'kvm' | 'tcg';
  disk: string;
  seedIso: string;
  qmpSocket: string;
  pidFile: string;
  serialLog: string;
  sshHost: string;
  sshPort: number;
}

/** QEMU reads commas in option values as separators unless doubled. */
function optionValue(value: string): string {
  return value.replace(/,/g, ',,');
}

/**
 * The QEMU command line of a VM. Only the agent's own paths, the vm_id it made and numbers
 * validated as integers reach it; vm_type and tenant_id never do.
 */
export function qemuArgs(launch: QemuLaunch): string[] {
  const host = launch.sshHost.includes(':') ? `[${launch.sshHost}]` : launch.sshHost;
  return [
    '-name',
    `guest=${launch.vmId}`,
    '-machine',
    `q35,accel=${launch.accel}`,
    ...(launch.accel === 'kvm' ? ['-cpu', 'host'] : []),
    '-m',
    `${launch.ramMb}M`,
    '-smp',
    String(launch.vcpuCount),
    '-drive',
    `if=virtio,format=qcow2,file=${optionValue(launch.disk)}`,
    '-drive',
    `if=virtio,format=raw,readonly=on,file=${optionValue(launch.seedIso)}`,
    '-netdev',
    `user,id=net0,hostfwd=tcp:${host}:${launch.sshPort}-:22`,
    '-device',
    'virtio-net-pci,netdev=net0',
    '-qmp',
    `unix:${optionValue(launch.qmpSocket)},server=on,wait=off`,
    '-pidfile',
    launch.pidFile,
    '-serial',
    `file:${launch.serialLog}`,
    '-display',
    'none',
    '-monitor',
    'none',
    '-daemonize',
  ];
}

/** cloud-init NoCloud user-data; JSON is valid YAML, so no value can break out of its field. */
export function cloudInitUserData(vmType: string, sshPubkey?: string): string {
  const config: Record<string, unknown> = { hostname: vmType, preserve_hostname: false };
  if (sshPubkey) config.ssh_authorized_keys = [sshPubkey];
  return `#cloud-config\n${JSON.stringify(config, null, 2)}\n`;
}

/** What QemuDriver keeps in a VM's sidecar. */
type QemuRecord = {
  kind: 'qemu';
  accel: 'kvm' | 'tcg';
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

/** The value after `flag` in a command line. */
function optionOf(args: readonly string[], flag: string): string | undefined {
  const index = args.indexOf(flag);
  return index >= 0 ? args[index + 1] : undefined;
}

/** The SSH forward qemuArgs put on the command line, read back from it. */
function forwardedPorts(args: readonly string[]): HostPort[] {
  const forward = /hostfwd=tcp:(?:\[[^\]]*\]|[^:,]*):(\d+)-:(\d+)/.exec(
    optionOf(args, '-netdev') ?? '',
  );
  if (!forward) return [];
  return [{ host_port: Number(forward[1]), guest_port: Number(forward[2]), protocol: 'tcp' }];
}

/** Runs one create step, so a failure says which step it was. */
async function step<T>(name: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw new VmCreateError(name, error instanceof Error ? error.message : String(error), {
      cause: error,
    });
  }
}

/** Starts, watches and stops QEMU virtual machines in VM_DISK_DIR. */
@Injectable()
export class QemuDriver extends VmDriver {
  private readonly logger = new Logger('QemuDriver');
  private blankImage?: Promise<string>;
  /** Only processes of this user are the agent's QEMUs. */
  private readonly agentUid = process.getuid!();

  constructor(
    private readonly config: VmHostConfig,
    private readonly files: VmFiles,
    private readonly hostFacts: HostFactsService,
    private readonly processes: ProcessTable,
    private readonly failpoint: CrashFailpoint,
  ) {
    super();
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

  checkDiskDir(): void {
    if (this.qmpSocket(LONGEST_VM_ID).length > MAX_SOCKET_PATH) {
      throw new Error(`too long: QMP socket paths under it would exceed ${MAX_SOCKET_PATH} bytes`);
    }
  }

  async checkTools(): Promise<void> {
    for (const tool of ['qemu-system-x86_64', 'qemu-img', 'genisoimage']) {
      try {
        await exec(tool, ['--version'], { timeout: 5_000 });
      } catch {
        this.logger.warn(
          `${tool} not found: VMs cannot be created on this node until it is installed`,
        );
      }
    }
  }

  /** Needs the base image now; runs under KVM when asked for and usable, else TCG. */
  async plan({ preferKvm }: { preferKvm: boolean }): Promise<VmPlan> {
    await this.baseImage();
    const accel = preferKvm && (await this.hostFacts.kvmUsable()) ? 'kvm' : 'tcg';
    const record: QemuRecord = { kind: 'qemu', accel, pid: null };
    return { record, summary: accel };
  }

  /** A qcow2 overlay on the base image, then a cloud-init seed ISO, both private to the agent. */
  async makeFiles(spec: VmSpec): Promise<void> {
    const { vmId } = spec;
    await step('disk', async () => this.createDisk(vmId, await this.baseImage()));
    this.failpoint.reached('after-disk', vmId);
    await step('seed ISO', () => this.createSeedIso(vmId, spec.vmType));
    this.failpoint.reached('after-seed', vmId);
  }

  /** QEMU daemonized on the VM's files, SSH forwarded from a free port on VM_WG_IP. */
  async start(spec: VmSpec, record: DriverRecord): Promise<StartedVm> {
    const { vmId } = spec;
    const { accel } = qemuRecord(record);
    return step('QEMU', async () => {
      const sshPort = await this.freeHostPort();
      const pid = await this.launch({
        vmId,
        ramMb: spec.ramMb,
        vcpuCount: spec.vcpuCount,
        accel,
        disk: this.files.disk(vmId),
        seedIso: this.seedIso(vmId),
        qmpSocket: this.qmpSocket(vmId),
        pidFile: this.pidFile(vmId),
        serialLog: this.serialLog(vmId),
        sshHost: this.config.wgIp,
        sshPort,
      });
      const started: QemuRecord = { kind: 'qemu', accel, pid };
      return {
        record: started,
        hostPorts: [{ host_port: sshPort, guest_port: SSH_GUEST_PORT, protocol: 'tcp' }],
        summary: `QEMU pid ${pid}, ${accel}, ssh on ${this.config.wgIp}:${sshPort}`,
      };
    });
  }

  /** QEMU's own view over QMP, once its pid is known to be this VM's live QEMU. */
  async inspect(vmId: string, record: DriverRecord): Promise<VmRunState> {
    const { pid } = qemuRecord(record);
    if (pid === null || !(await this.isAlive(pid, vmId))) return 'stopped';
    try {
      return (await this.status(vmId)).running ? 'running' : 'stopped';
    } catch {
      // Alive but QMP not answering (yet): not known to run.
      return 'unknown';
    }
  }

  /** QEMU processes whose command line names one of these VMs and its pidfile under VM_DISK_DIR. */
  async find(vmIds: readonly string[]): Promise<Map<string, FoundVm>> {
    const found = new Map<string, FoundVm>();
    for (const [vmId, processes] of await this.processesOf(vmIds)) {
      const [first] = processes;
      const accel = optionOf(first.args, '-machine')?.includes('accel=kvm') ? 'kvm' : 'tcg';
      const resident = await Promise.all(
        processes.map(({ pid }) => this.processes.residentMb(pid)),
      );
      const record: QemuRecord = { kind: 'qemu', accel, pid: first.pid };
      found.set(vmId, {
        record,
        hostPorts: forwardedPorts(first.args),
        rssMb: resident.reduce((total, mb) => total + mb, 0),
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
    if (pid !== null && (await this.isAlive(pid, vmId))) pids.add(pid);
    for (const found of (await this.processesOf([vmId])).get(vmId) ?? []) {
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
    let alive = asked ? await this.survivors([...pids], vmId, STOP_GRACE_MS) : [...pids];
    if (alive.length === 0) return;
    for (const survivor of alive) this.signal(survivor, 'SIGTERM');
    alive = await this.survivors(alive, vmId, STOP_GRACE_MS);
    if (alive.length === 0) return;
    this.logger.warn(
      `vm ${vmId}: QEMU pid ${alive.join(', ')} ignored quit and SIGTERM; killing it`,
    );
    for (const survivor of alive) this.signal(survivor, 'SIGKILL');
    alive = await this.survivors(alive, vmId, KILL_GRACE_MS);
    if (alive.length > 0) {
      throw new VmStillRunningError(
        `vm ${vmId}: QEMU pid ${alive.join(', ')} still runs after quit, SIGTERM and SIGKILL; the VM is kept`,
      );
    }
  }

  /** VM_BASE_IMAGE, or a small blank qcow2 the agent makes once when it is unset. */
  async baseImage(): Promise<string> {
    if (this.config.baseImage) {
      try {
        await access(this.config.baseImage, constants.R_OK);
      } catch {
        throw new BaseImageMissingError(
          `VM_BASE_IMAGE ${this.config.baseImage} does not exist or is not readable`,
        );
      }
      return this.config.baseImage;
    }
    // One blank image, made once even when the first creates arrive together.
    this.blankImage ??= this.makeBlankImage().catch((error: unknown) => {
      this.blankImage = undefined;
      throw error;
    });
    return this.blankImage;
  }

  private async makeBlankImage(): Promise<string> {
    const blank = this.files.blankBaseImage();
    try {
      await access(blank, constants.R_OK);
    } catch {
      const partial = `${blank}.tmp`;
      try {
        await this.run('qemu-img', ['create', '-q', '-f', 'qcow2', partial, BLANK_BASE_IMAGE_SIZE]);
        await chmod(partial, PRIVATE_FILE_MODE);
        await rename(partial, blank);
      } catch (error) {
        await rm(partial, { force: true });
        throw error;
      }
      this.logger.log(`made blank base image ${blank} (VM_BASE_IMAGE unset; it boots nothing)`);
    }
    return blank;
  }

  /** A qcow2 overlay on the base image: the VM writes here, the base stays untouched. */
  private async createDisk(vmId: string, baseImage: string): Promise<string> {
    const disk = this.files.disk(vmId);
    await this.run('qemu-img', [
      'create',
      '-q',
      '-f',
      'qcow2',
      '-F',
      'qcow2',
      '-b',
      baseImage,
      disk,
    ]);
    await chmod(disk, PRIVATE_FILE_MODE);
    return disk;
  }

  private async createSeedIso(vmId: string, vmType: string): Promise<string> {
    const dir = join(this.files.runDir(vmId), 'cidata');
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    const privately = { mode: PRIVATE_FILE_MODE };
    await writeFile(
      join(dir, 'meta-data'),
      `instance-id: ${vmId}\nlocal-hostname: ${vmType}\n`,
      privately,
    );
    await writeFile(
      join(dir, 'user-data'),
      cloudInitUserData(vmType, this.config.sshPubkey),
      privately,
    );
    const iso = this.seedIso(vmId);
    await this.run('genisoimage', [
      '-quiet',
      '-output',
      iso,
      '-volid',
      'cidata',
      '-joliet',
      '-rock',
      join(dir, 'user-data'),
      join(dir, 'meta-data'),
    ]);
    await rm(dir, { recursive: true, force: true });
    await chmod(iso, PRIVATE_FILE_MODE);
    return iso;
  }

  /** A TCP port free on the node's address right now, for the VM's SSH forward. */
  private freeHostPort(): Promise<number> {
    return new Promise((resolve, reject) => {
      const probe = createServer();
      probe.once('error', reject);
      probe.listen(0, this.config.wgIp, () => {
        const address = probe.address();
        probe.close(() =>
          typeof address === 'object' && address
            ? resolve(address.port)
            : reject(new Error('no port')),
        );
      });
    });
  }

  /** Starts QEMU daemonized; resolves with its pid once it runs in the background. */
  private async launch(launch: QemuLaunch): Promise<number> {
    await this.run('qemu-system-x86_64', qemuArgs(launch), 60_000);
    this.failpoint.reached('after-launch-before-pid-written', launch.vmId);
    const pid = Number((await readFile(launch.pidFile, 'utf8')).trim());
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`unreadable pidfile ${launch.pidFile}`);
    return pid;
  }

  private async status(vmId: string): Promise<QmpStatus> {
    return withQmp(
      this.qmpSocket(vmId),
      QMP_TIMEOUT_MS,
      async (qmp) => (await qmp.execute('query-status')) as QmpStatus,
    );
  }

  /**
   * The vm_id a process runs, when it is a QEMU this driver started: run by the agent's own
   * user, its program a qemu-system-* (when readable), `-name guest=<vm_id>` and that VM's
   * pidfile under this agent's VM_DISK_DIR. Anyone can fake a command line, so that alone
   * never gets a process adopted, reported or signalled.
   */
  private vmIdOf({ args, uid, exe }: HostProcess): string | undefined {
    if (uid === undefined || uid !== this.agentUid) return undefined;
    if (exe !== undefined && !basename(exe).startsWith('qemu-system-')) return undefined;
    if (!basename(args[0] ?? '').startsWith('qemu-system-')) return undefined;
    const vmId = /^guest=(.+)$/.exec(optionOf(args, '-name') ?? '')?.[1];
    if (!vmId || optionOf(args, '-pidfile') !== this.pidFile(vmId)) return undefined;
    return vmId;
  }

  /** The live QEMU processes of these VMs, oldest pid first, by vm id. */
  private async processesOf(
    vmIds: readonly string[],
  ): Promise<Map<string, Array<{ pid: number; args: string[] }>>> {
    const wanted = new Set(vmIds);
    const byVm = new Map<string, Array<{ pid: number; args: string[] }>>();
    const processes = await this.processes.list((entry) => wanted.has(this.vmIdOf(entry) ?? ''));
    for (const entry of processes.sort((a, b) => a.pid - b.pid)) {
      const vmId = this.vmIdOf(entry)!;
      byVm.set(vmId, [...(byVm.get(vmId) ?? []), entry]);
    }
    return byVm;
  }

  /** True while the process is this VM's QEMU (not a zombie, not a reused pid). */
  private async isAlive(pid: number, vmId: string): Promise<boolean> {
    const entry = await this.processes.get(pid);
    return entry !== undefined && this.vmIdOf(entry) === vmId;
  }

  private signal(pid: number, signal: NodeJS.Signals): void {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }

  /** The pids still this VM's QEMU once all are gone or `withinMs` passed. */
  private async survivors(pids: number[], vmId: string, withinMs: number): Promise<number[]> {
    const deadline = Date.now() + withinMs;
    for (;;) {
      const alive: number[] = [];
      for (const pid of pids) if (await this.isAlive(pid, vmId)) alive.push(pid);
      if (alive.length === 0 || Date.now() >= deadline) return alive;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  private async run(command: string, args: string[], timeoutMs = 30_000): Promise<void> {
    try {
      await exec(command, args, { timeout: timeoutMs });
    } catch (error) {
      const output = (error as { stderr?: unknown }).stderr;
      const stderr = (typeof output === 'string' ? output : '').trim();
      const reason = stderr || (error as Error).message;
      throw new Error(`${command} failed: ${reason.split('\n').slice(-3).join(' ')}`);
    }
  }
}
