import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { DELETED_DISK_SWEEP_INTERVAL_MS, DeletedDisks } from './deleted-disks.service';
import { messageOf } from '../vms.errors';

/** Removes deleted VMs' disks once their retention (VM_DISK_RETENTION_S) has passed. */
@Injectable()
export class DeletedDisksJob {
  private readonly logger = new Logger('Vms');
  private running = false;

  constructor(private readonly disks: DeletedDisks) {}

  @Interval('deleted-disks', DELETED_DISK_SWEEP_INTERVAL_MS)
  async sweep(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.disks.sweep();
    } catch (error) {
      this.logger.error(`deleted disks sweep failed: ${messageOf(error)}`);
    } finally {
      this.running = false;
    }
  }
}
