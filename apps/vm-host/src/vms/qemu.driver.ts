import { Injectable, Logger } from '@nestjs/common';
import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { VmHostConfig } from '../config/vm-host.config';
import { QmpStatus, withQmp } from './qmp.client';
import { VmFiles } from './vm-files';
import { BaseImageMissingError } from './vms.errors';

const exec = promisify(execFile);

/** Size of the blank base image made when VM_BASE_IMAGE is unset: it boots nothing. */
const BLANK_BASE_IMAGE_SIZE = '1G';
const QMP_TIMEOUT_MS = 2_000;
/** Grace after QMP quit, then again after SIGTERM, before SIGKILL. */
const STOP_GRACE_MS = 1_500;

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

/** Starts, watches and stops QEMU virtual machines in VM_DISK_DIR. */
@Injectable()
export class QemuDriver {
  private readonly logger = new Logger('QemuDriver');
  private blankImage?: Promise<string>;

  constructor(
    private readonly config: VmHostConfig,
    private readonly files: VmFiles,
  ) {}

  /** Warns once at start-up about what would make every create fail. */
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
      await this.run('qemu-img', [
        'create',
        '-q',
        '-f',
        'qcow2',
        `${blank}.tmp`,
        BLANK_BASE_IMAGE_SIZE,
      ]);
      await rename(`${blank}.tmp`, blank);
      this.logger.log(`made blank base image ${blank} (VM_BASE_IMAGE unset; it boots nothing)`);
    }
    return blank;
  }

  /** A qcow2 overlay on the base image: the VM writes here, the base stays untouched. */
  async createDisk(vmId: string, baseImage: string): Promise<string> {
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
    return disk;
  }

  async createSeedIso(vmId: string, vmType: string): Promise<string> {
    const dir = join(this.files.runDir(vmId), 'cidata');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'meta-data'), `instance-id: ${vmId}\nlocal-hostname: ${vmType}\n`);
    await writeFile(join(dir, 'user-data'), cloudInitUserData(vmType, this.config.sshPubkey));
    const iso = this.files.seedIso(vmId);
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
    return iso;
  }

  /** A TCP port free on the node's address right now, for the VM's SSH forward. */
  freeHostPort(): Promise<number> {
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
  async launch(launch: QemuLaunch): Promise<number> {
    await this.run('qemu-system-x86_64', qemuArgs(launch), 60_000);
    const pid = Number((await readFile(launch.pidFile, 'utf8')).trim());
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`unreadable pidfile ${launch.pidFile}`);
    return pid;
  }

  async status(vmId: string): Promise<QmpStatus> {
    return withQmp(
      this.files.qmpSocket(vmId),
      QMP_TIMEOUT_MS,
      async (qmp) => (await qmp.execute('query-status')) as QmpStatus,
    );
  }

  /** True while the process is this VM's QEMU (not a zombie, not a reused pid). */
  async isAlive(pid: number, vmId: string): Promise<boolean> {
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      if (/^\d+ \(.*\) Z/.test(stat)) return false;
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
      return cmdline.includes(`guest=${vmId}`);
    } catch {
      return false;
    }
  }

  /** QMP quit, then SIGTERM, then SIGKILL, each after a short grace. */
  async stop(vmId: string, pid: number): Promise<void> {
    if (!(await this.isAlive(pid, vmId))) return;
    try {
      await withQmp(this.files.qmpSocket(vmId), QMP_TIMEOUT_MS, (qmp) => qmp.execute('quit'));
    } catch {
      // QEMU may close the socket as it quits; the wait below tells.
    }
    if (await this.exited(pid, vmId, STOP_GRACE_MS)) return;
    this.signal(pid, 'SIGTERM');
    if (await this.exited(pid, vmId, STOP_GRACE_MS)) return;
    this.logger.warn(`vm ${vmId}: QEMU pid ${pid} ignored quit and SIGTERM; killing it`);
    this.signal(pid, 'SIGKILL');
    await this.exited(pid, vmId, STOP_GRACE_MS);
  }

  private signal(pid: number, signal: NodeJS.Signals): void {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }

  private async exited(pid: number, vmId: string, withinMs: number): Promise<boolean> {
    const deadline = Date.now() + withinMs;
    while (Date.now() < deadline) {
      if (!(await this.isAlive(pid, vmId))) return true;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return !(await this.isAlive(pid, vmId));
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
