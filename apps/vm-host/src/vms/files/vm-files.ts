import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ID_PATTERN } from '@app/fleet-domain';
import { VmHostConfig } from '../../config/vm-host.config';
import { SidecarUnreadableError } from '../vms.errors';
import { VmSidecar, isStoredSidecar, upgradeSidecar } from './vm-sidecar';

/**
 * VM disks, seed ISOs, sidecars, QEMU's files and sockets: readable by the agent (and the QEMU
 * it starts) alone.
 */
export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;

/** Takes group and other bits off what older agents made readable to all. */
async function makePrivate(path: string, mode: number): Promise<void> {
  const current = await stat(path);
  if ((current.mode & 0o077) !== 0) await chmod(path, mode);
}

/** A disk of a deleted VM, kept until its retention (VM_DISK_RETENTION_S) has passed. */
export interface DeletedDisk {
  vmId: string;
  /** When the VM was deleted, in wall-clock milliseconds since the epoch. */
  deletedAtMs: number;
  path: string;
}

/** `<deleted_at_ms>.<vm_id>.qcow2`: the time first, so a vm_id with dots still parses. */
const DELETED_DISK_NAME = /^(\d{1,15})\.(.+)\.qcow2$/;

/**
 * The layout of VM_DISK_DIR: `disks/<vm_id>.qcow2` (the VM's disk), `run/<vm_id>/` (the
 * sidecar and the driver's own files, e.g. QMP socket, pidfile, seed ISO, serial log; removed
 * with the VM), `deleted/<deleted_at_ms>.<vm_id>.qcow2` (disks of deleted VMs, until their
 * retention passes), `base/` (the blank base image made when VM_BASE_IMAGE is unset). Every
 * name under it is a vm_id the agent made.
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

  /** Where a deleted VM's disk waits out its retention; vmId must be a valid id. */
  deletedDisk(vmId: string, deletedAtMs: number): string {
    if (!ID_PATTERN.test(vmId) || !Number.isSafeInteger(deletedAtMs) || deletedAtMs < 0) {
      throw new Error(`not a deleted disk: vm ${vmId} at ${deletedAtMs}`);
    }
    return join(this.root, 'deleted', `${deletedAtMs}.${vmId}.qcow2`);
  }

  /** Where a restore writes the VM's disk before it is whole (renamed to `disk` then). */
  restoringDisk(vmId: string): string {
    return join(this.root, 'disks', `${vmId}.qcow2.restoring`);
  }

  /**
   * Where a superseded VM's files are set aside (`superseded/<vm_id>-<stamp>/`): the VM was
   * restored on another node, so this one must never run it again; kept for the operator.
   */
  supersededDir(vmId: string, stamp: string): string {
    if (!ID_PATTERN.test(vmId) || !/^\d{8}T\d{6}Z$/.test(stamp)) {
      throw new Error(`not a superseded vm: ${vmId} at ${stamp}`);
    }
    return join(this.root, 'superseded', `${vmId}-${stamp}`);
  }

  blankBaseImage(): string {
    return join(this.root, 'base', 'blank.qcow2');
  }

  private sidecar(vmId: string): string {
    return join(this.runDir(vmId), 'vm.json');
  }

  /**
   * Creates the folders the layout needs, private (0700), and makes private what older agents
   * left readable; fails when VM_DISK_DIR is not writable.
   */
  async prepare(): Promise<void> {
    for (const dir of ['disks', 'run', 'deleted', 'base']) {
      await mkdir(join(this.root, dir), { recursive: true, mode: PRIVATE_DIR_MODE });
      await makePrivate(join(this.root, dir), PRIVATE_DIR_MODE);
    }
    for (const dir of ['disks', 'deleted']) {
      for (const entry of await readdir(join(this.root, dir), { withFileTypes: true })) {
        if (entry.isFile()) await makePrivate(join(this.root, dir, entry.name), PRIVATE_FILE_MODE);
      }
    }
    for (const vmId of await this.listVmIds()) {
      const dir = this.runDir(vmId);
      await makePrivate(dir, PRIVATE_DIR_MODE);
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        // QMP sockets too: QEMU makes them 0750 (-daemonize sets its umask to 027).
        if (entry.isFile() || entry.isSocket()) {
          await makePrivate(join(dir, entry.name), PRIVATE_FILE_MODE);
        }
      }
    }
    const probe = join(this.root, 'run', `.write-test-${process.pid}`);
    await writeFile(probe, '', { mode: PRIVATE_FILE_MODE });
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
        await mkdir(this.runDir(vmId), { recursive: false, mode: PRIVATE_DIR_MODE });
        return vmId;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
  }

  /**
   * Creates the run folder of `vmId`, the id the controller minted for a new VM: false when the
   * id is taken (its run folder or its disk exists), so no VM is made over another's files.
   */
  async claimVmId(vmId: string): Promise<boolean> {
    if (!ID_PATTERN.test(vmId)) return false;
    const diskTaken = await stat(this.disk(vmId)).then(
      () => true,
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return false;
        throw error;
      },
    );
    if (diskTaken) return false;
    try {
      await mkdir(this.runDir(vmId), { recursive: false, mode: PRIVATE_DIR_MODE });
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    }
  }

  async listVmIds(): Promise<string[]> {
    const entries = await readdir(join(this.root, 'run'), { withFileTypes: true }).catch(() => []);
    return entries
      .filter((entry) => entry.isDirectory() && ID_PATTERN.test(entry.name))
      .map((entry) => entry.name)
      .sort();
  }

  /**
   * The vm ids of the disks in `disks/` that have no run folder: VMs deleted by agents that
   * kept their disks, or by one killed between removing the run folder and the disk.
   */
  async listDisksWithoutVm(): Promise<string[]> {
    const entries = await readdir(join(this.root, 'disks'), { withFileTypes: true });
    const vmIds = new Set(await this.listVmIds());
    return entries
      .filter((entry) => entry.isFile() && entry.name.endsWith('.qcow2'))
      .map((entry) => entry.name.slice(0, -'.qcow2'.length))
      .filter((vmId) => ID_PATTERN.test(vmId) && !vmIds.has(vmId))
      .sort();
  }

  /**
   * The disks in `deleted/` whose names the agent made; anything else there (folders, symlinks,
   * other names) is left alone.
   */
  async listDeletedDisks(): Promise<DeletedDisk[]> {
    const entries = await readdir(join(this.root, 'deleted'), { withFileTypes: true });
    return entries.flatMap((entry) => {
      const match = entry.isFile() ? DELETED_DISK_NAME.exec(entry.name) : null;
      if (!match || !ID_PATTERN.test(match[2])) return [];
      // The entry's own name: one rebuilt from the number would lose leading zeros (0001.).
      const path = join(this.root, 'deleted', entry.name);
      return [{ vmId: match[2], deletedAtMs: Number(match[1]), path }];
    });
  }

  /**
   * The VM's sidecar; undefined only when there is none (ENOENT). Any other failure (EACCES,
   * EIO, not JSON, not a sidecar of this VM) throws SidecarUnreadableError: the VM may still
   * run, so the caller must not take it for a VM that is gone.
   */
  async readSidecar(vmId: string): Promise<VmSidecar | undefined> {
    let text: string;
    try {
      text = await readFile(this.sidecar(vmId), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      const code = (error as NodeJS.ErrnoException).code;
      throw new SidecarUnreadableError(vmId, code ?? (error as Error).message, { cause: error });
    }
    let stored: unknown;
    try {
      stored = JSON.parse(text);
    } catch (error) {
      throw new SidecarUnreadableError(vmId, 'not JSON', { cause: error });
    }
    if (!isStoredSidecar(stored, vmId)) {
      throw new SidecarUnreadableError(vmId, `not a sidecar of vm ${vmId}`);
    }
    return upgradeSidecar(stored);
  }

  /** Written to a temporary file and renamed, so a killed agent never leaves half a sidecar. */
  async writeSidecar(sidecar: VmSidecar): Promise<void> {
    const path = this.sidecar(sidecar.vm_id);
    await writeFile(`${path}.tmp`, JSON.stringify(sidecar, null, 2), { mode: PRIVATE_FILE_MODE });
    await rename(`${path}.tmp`, path);
  }

  async removeRuntime(vmId: string): Promise<void> {
    await rm(this.runDir(vmId), { recursive: true, force: true });
  }

  /** Everything of a VM that was never accepted: its run folder and its disk. */
  async removeAll(vmId: string): Promise<void> {
    await this.removeRuntime(vmId);
    await rm(this.disk(vmId), { force: true });
    await rm(this.restoringDisk(vmId), { force: true });
  }
}
