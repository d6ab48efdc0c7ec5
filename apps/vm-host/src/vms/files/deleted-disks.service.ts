import { Injectable, Logger } from '@nestjs/common';
import { rename, rm } from 'node:fs/promises';
import { Clock } from '@app/daemon';
import { ID_PATTERN, toRfc3339 } from '@app/fleet-domain';
import { VmHostConfig } from '../../config/vm-host.config';
import { DEFAULT_DISK_RETENTION_S } from '../../config/vm-host-config.values';
import { VmDriver } from '../vm-driver';
import { VmFiles } from './vm-files';
import { messageOf } from '../vms.errors';

/** How often the sweep looks for deleted disks past their retention. */
export const DELETED_DISK_SWEEP_INTERVAL_MS = 60_000;

/**
 * A stamp further in the past than the retention and this is not believed (a clock far behind
 * when the VM was deleted): its disk is taken as deleted when first seen, and kept the full
 * retention from then. Keeping a disk longer is the safe mistake; removing it early is not.
 */
export const DELETED_STAMP_FAR_PAST_MS = 24 * 60 * 60 * 1000;

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT';
}

/**
 * The disks of deleted VMs: removed with the VM when VM_DISK_RETENTION_S is 0, else moved to
 * `deleted/` stamped with the deletion time and removed by the sweep (every minute, and at
 * start-up) once the retention has passed. The retention is measured on the agent's own clock
 * (Clock.now, which a stepped wall clock does not move): from the delete for disks this agent
 * retired, from first sight for those of an earlier run, less the time their wall-clock stamp
 * says had passed by then (a stamp from the future counts as now, one from the far past, see
 * DELETED_STAMP_FAR_PAST_MS, too). Only files the agent named are touched, all under
 * VM_DISK_DIR, and never a disk of a VM that still has a run folder or a live process.
 */
@Injectable()
export class DeletedDisks {
  private readonly logger = new Logger('Vms');
  private readonly retentionMs: number;
  /** When each kept disk's retention began on Clock.now, by its file's path. */
  private readonly retainedSince = new Map<string, number>();

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
    this.retainedSince.set(kept, this.clock.now());
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
    const nowMs = this.clock.now();
    const wallNowMs = this.clock.wallNow();
    const kept = await this.files.listDeletedDisks();
    const due = kept.filter(({ deletedAtMs, path }) => {
      let since = this.retainedSince.get(path);
      if (since === undefined) {
        since = nowMs - this.elapsedByStamp(deletedAtMs, wallNowMs, path);
        this.retainedSince.set(path, since);
      }
      return nowMs - since >= this.retentionMs;
    });
    // Never a disk a process still runs on (a VM whose delete was cut short, say).
    const live = due.length > 0 ? await this.driver.find(due.map(({ vmId }) => vmId)) : new Map();
    let removed = 0;
    for (const { vmId, path } of due) {
      if (live.has(vmId)) {
        this.logger.warn(
          `vm ${vmId}: deleted disk ${path} kept past its retention, a process of it runs`,
        );
        continue;
      }
      try {
        await rm(path, { force: true });
        this.retainedSince.delete(path);
        removed += 1;
      } catch (error) {
        this.logger.error(`vm ${vmId}: could not remove its deleted disk: ${messageOf(error)}`);
      }
    }
    const listed = new Set(kept.map(({ path }) => path));
    for (const path of this.retainedSince.keys()) {
      if (!listed.has(path)) this.retainedSince.delete(path);
    }
    if (removed > 0) {
      this.logger.log(
        `removed ${removed} disk(s) of VMs deleted over ${this.retentionMs / 1000} s ago`,
      );
    }
    return removed;
  }

  /**
   * How much of its retention a disk of an earlier run had served when first seen, by its
   * wall-clock stamp: none for a stamp from the future or the far past (a clock stepped since
   * the delete), else the time since, at most the retention.
   */
  private elapsedByStamp(deletedAtMs: number, wallNowMs: number, path: string): number {
    const elapsed = wallNowMs - deletedAtMs;
    if (elapsed < 0 || elapsed > this.retentionMs + DELETED_STAMP_FAR_PAST_MS) {
      this.logger.warn(
        `deleted disk ${path}: its stamp ${toRfc3339(deletedAtMs)} is ${elapsed < 0 ? 'in the future' : 'far in the past'} of this clock (${toRfc3339(wallNowMs)}); kept the full retention from now`,
      );
      return 0;
    }
    return Math.min(elapsed, this.retentionMs);
  }
}
