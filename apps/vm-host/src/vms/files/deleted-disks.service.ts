import { Injectable, Logger } from '@nestjs/common';
import { rename, rm } from 'node:fs/promises';
import { Clock } from '@app/daemon';
import { ID_PATTERN, toRfc3339 } from '@app/fleet-domain';
import { DEFAULT_DISK_RETENTION_S, VmHostConfig } from '../../config/vm-host.config';
import { VmDriver } from '../vm-driver';
import { VmFiles } from './vm-files';
import { messageOf } from '../vms.errors';

/** How often the sweep looks for deleted disks past their retention. */
export const DELETED_DISK_SWEEP_INTERVAL_MS = 60_000;

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT';
}

/**
 * The disks of deleted VMs: removed with the VM when VM_DISK_RETENTION_S is 0, else moved to
 * `deleted/` stamped with the deletion time and removed by the sweep (every minute, and at
 * start-up) once the retention has passed. Deletion times are wall-clock: they outlive the
 * agent. Only files the agent named are touched, all under VM_DISK_DIR, and never a disk of a
 * VM that still has a run folder or a live process.
 */
@Injectable()
export class DeletedDisks {
  private readonly logger = new Logger('Vms');
  private readonly retentionMs: number;

  constructor(
    private readonly files: VmFiles,
    private readonly driver: VmDriver,
    private readonly clock: Clock,
    config: VmHostConfig,
  ) {
    this.retentionMs = (config.diskRetentionS ?? DEFAULT_DISK_RETENTION_S) * 1000;
  }

  /**
   * Called by a delete once the VM is stopped and its run folder removed: removes its disk, or
   * keeps it for the retention. Says what became of the disk, for the log.
   */
  async retire(vmId: string): Promise<string> {
    if (!ID_PATTERN.test(vmId)) throw new Error(`not a vm id: ${vmId}`);
    const disk = this.files.disk(vmId);
    if (this.retentionMs === 0) {
      await rm(disk, { force: true });
      return 'disk removed';
    }
    const deletedAtMs = this.clock.wallNow();
    const kept = this.files.deletedDisk(vmId, deletedAtMs);
    try {
      await rename(disk, kept);
    } catch (error) {
      if (isMissing(error)) return 'no disk';
      throw error;
    }
    return `disk kept as ${kept} until ${toRfc3339(deletedAtMs + this.retentionMs)}`;
  }

  /**
   * At start-up, before the agent listens and after reconciling: a disk in `disks/` with no run
   * folder (kept by an older agent, or left by one killed mid-delete) is taken as deleted now,
   * so it gets the full retention, unless a process of its VM still runs; then the sweep.
   */
  async recover(): Promise<void> {
    const orphans = await this.files.listDisksWithoutVm();
    const live = orphans.length > 0 ? await this.driver.find(orphans) : new Map();
    for (const vmId of orphans) {
      if (live.has(vmId)) {
        this.logger.warn(`vm ${vmId}: disk without a run folder kept, a process of it runs`);
        continue;
      }
      try {
        const disk = this.files.disk(vmId);
        if (this.retentionMs === 0) {
          await rm(disk, { force: true });
        } else {
          // Deleted now, as far as anyone can tell: its last write may be long before the
          // delete, and would cut the retention short or skip it.
          await rename(disk, this.files.deletedDisk(vmId, this.clock.wallNow()));
        }
      } catch (error) {
        if (!isMissing(error)) {
          this.logger.error(`vm ${vmId}: could not retire its disk: ${messageOf(error)}`);
        }
      }
    }
    if (orphans.length > 0) {
      this.logger.log(`${orphans.length} disk(s) of deleted VMs found in disks/, retired`);
    }
    await this.sweep();
  }

  /** Removes the deleted disks past their retention; returns how many it removed. */
  async sweep(): Promise<number> {
    const nowMs = this.clock.wallNow();
    let removed = 0;
    for (const { vmId, deletedAtMs, path } of await this.files.listDeletedDisks()) {
      if (nowMs - deletedAtMs < this.retentionMs) continue;
      try {
        await rm(path, { force: true });
        removed += 1;
      } catch (error) {
        this.logger.error(`vm ${vmId}: could not remove its deleted disk: ${messageOf(error)}`);
      }
    }
    if (removed > 0) {
      this.logger.log(
        `removed ${removed} disk(s) of VMs deleted over ${this.retentionMs / 1000} s ago`,
      );
    }
    return removed;
  }
}
