import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { VmHostConfig } from '../../config/vm-host.config';
import { messageOf } from '../vms.errors';
import { VmBackupsService } from './vm-backups.service';

/** How often the schedule looks for VMs whose backup is due (VM_BACKUP_EVERY_S). */
export const BACKUP_SCHEDULE_TICK_MS = 30_000;

/** Backs up each VM every VM_BACKUP_EVERY_S, when VM_BACKUP_DIR is set and it is not 0. */
@Injectable()
export class VmBackupsJob implements OnApplicationBootstrap {
  private readonly logger = new Logger('Backups');
  private running = false;

  constructor(
    private readonly config: VmHostConfig,
    private readonly backups: VmBackupsService,
    private readonly scheduler: SchedulerRegistry,
  ) {}

  onApplicationBootstrap(): void {
    const { backupDir, backupEveryS, backupKeepLast, backupKeepDaily, backupKeepWeekly } =
      this.config;
    if (!backupDir) return;
    const keep = `keep-last ${backupKeepLast}, keep-daily ${backupKeepDaily}, keep-weekly ${backupKeepWeekly}`;
    this.logger.log(
      `node ${this.config.nodeId}: VMs backed up to ${backupDir} ${backupEveryS === 0 ? 'when asked only' : `every ${backupEveryS} s`} (${keep})`,
    );
    if (backupEveryS === 0) return;
    this.scheduler.addInterval(
      'vm-backups',
      setInterval(() => void this.tick(), BACKUP_SCHEDULE_TICK_MS),
    );
  }

  async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.backups.backUpDue();
    } catch (error) {
      this.logger.error(`scheduled backups failed: ${messageOf(error)}`);
    } finally {
      this.running = false;
    }
  }
}
