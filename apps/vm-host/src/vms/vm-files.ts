import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { HostPort, ID_PATTERN } from '@app/fleet-domain';
import { VmHostConfig } from '../config/vm-host.config';
import type { DriverRecord } from './vm-driver';

/**
 * What the agent keeps of a VM beside it, so that a restarted (or killed) agent reports every
 * VM again at its first heartbeat: the heartbeat needs nothing that is not in here or in what
 * the driver tells of the running VM.
 */
export interface VmSidecar {
  vm_id: string;
  vm_type: string;
  tenant_id: string | null;
  ram_alloc_mb: number;
  vcpu_count: number;
  host_ports: HostPort[];
  created_at: string;
  /** When the driver started the VM; null until then. */
  started_at: string | null;
  /** Why provisioning failed; the VM then stays listed in state Error until deleted. */
  error: string | null;
  /** The driver's own data (QEMU: pid, acceleration); only the driver reads it. */
  driver: DriverRecord;
}

/** A sidecar as agents before VmDriver wrote it: QEMU's pid and acceleration at the top level. */
type QemuEraSidecar = Omit<VmSidecar, 'driver'> & { accel: 'kvm' | 'tcg'; pid: number | null };

/** VMs outlive agent upgrades: a sidecar written before VmDriver reads as a QEMU one. */
function upgradeSidecar(stored: VmSidecar | QemuEraSidecar): VmSidecar {
  if ('driver' in stored) return stored;
  const { accel, pid, ...rest } = stored;
  return { ...rest, driver: { kind: 'qemu', accel, pid } };
}

/**
 * The layout of VM_DISK_DIR: `disks/<vm_id>.qcow2` (kept after deletion), `run/<vm_id>/`
 * (the sidecar and the driver's own files, e.g. QMP socket, pidfile, seed ISO, serial log;
 * removed with the VM), `base/` (the blank base image made when VM_BASE_IMAGE is unset).
 * Every name under it is a vm_id the agent made.
 */
@Injectable()
export class VmFiles {
  readonly root: string;

  constructor(config: VmHostConfig) {
    this.root = config.diskDir;
  }

  disk(vmId: string): string {
    return join(this.root, 'disks', `${vmId}.qcow2`);
  }

  runDir(vmId: string): string {
    return join(this.root, 'run', vmId);
  }

  blankBaseImage(): string {
    return join(this.root, 'base', 'blank.qcow2');
  }

  private sidecar(vmId: string): string {
    return join(this.runDir(vmId), 'vm.json');
  }

  /** Creates the folders the layout needs; fails when VM_DISK_DIR is not writable. */
  async prepare(): Promise<void> {
    for (const dir of ['disks', 'run', 'base'])
      await mkdir(join(this.root, dir), { recursive: true });
    const probe = join(this.root, 'run', `.write-test-${process.pid}`);
    await writeFile(probe, '');
    await rm(probe);
  }

  /**
   * A new vm_id whose run folder this call created: 64 random bits, so many creates in one
   * second never collide, and only [a-z0-9-], so it is safe as a file name and a QEMU option.
   */
  async newVmId(): Promise<string> {
    for (;;) {
      const vmId = `vm-${randomBytes(8).toString('hex')}`;
      try {
        await mkdir(this.runDir(vmId), { recursive: false });
        return vmId;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
  }

  async listVmIds(): Promise<string[]> {
    const entries = await readdir(join(this.root, 'run'), { withFileTypes: true }).catch(() => []);
    return entries
      .filter((entry) => entry.isDirectory() && ID_PATTERN.test(entry.name))
      .map((entry) => entry.name)
      .sort();
  }

  async readSidecar(vmId: string): Promise<VmSidecar | undefined> {
    try {
      return upgradeSidecar(
        JSON.parse(await readFile(this.sidecar(vmId), 'utf8')) as VmSidecar | QemuEraSidecar,
      );
    } catch {
      return undefined;
    }
  }

  /** Written to a temporary file and renamed, so a killed agent never leaves half a sidecar. */
  async writeSidecar(sidecar: VmSidecar): Promise<void> {
    const path = this.sidecar(sidecar.vm_id);
    await writeFile(`${path}.tmp`, JSON.stringify(sidecar, null, 2));
    await rename(`${path}.tmp`, path);
  }

  async removeRuntime(vmId: string): Promise<void> {
    await rm(this.runDir(vmId), { recursive: true, force: true });
  }
}
