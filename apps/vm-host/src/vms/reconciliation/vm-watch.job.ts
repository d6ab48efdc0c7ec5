import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { VmReconciliationService } from './vm-reconciliation.service';
import { VmDriver } from '../vm-driver';
import { DiskFullPauses } from './disk-full-pauses';
import { messageOf } from '../vms.errors';

/**
 * How often the agent looks for VMs whose process ended while they should run, between
 * heartbeats (every 10 s by default): a crash is noticed within this, and its restart is due
 * after the backoff (5 s first).
 */
export const VM_WATCH_INTERVAL_MS = 2_000;

/**
 * Reconciles the VMs with their processes and desired states between heartbeats, keeps
 * their console logs bounded, and resumes VMs paused on a full disk once there is room.
 */
@Injectable()
export class VmWatchJob {
  private readonly logger = new Logger('Vms');
  private running = false;

  constructor(
    private readonly reconciliation: VmReconciliationService,
    private readonly driver: VmDriver,
    private readonly diskFullPauses: DiskFullPauses,
  ) {}

  @Interval('vm-watch', VM_WATCH_INTERVAL_MS)
  async watch(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const { sidecars } = await this.reconciliation.reconciled();
      for (const { vm_id } of sidecars) await this.driver.capConsoleLog(vm_id);
      await this.diskFullPauses.resumeWhereRoom(sidecars);
    } catch (error) {
      this.logger.error(`VM watch failed: ${messageOf(error)}`);
    } finally {
      this.running = false;
    }
  }
}
