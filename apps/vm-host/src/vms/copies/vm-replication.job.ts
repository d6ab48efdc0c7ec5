import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { messageOf } from '../vms.errors';
import { VmReplicationService } from './vm-replication.service';

/** How often the VMs' copy plans are looked at: a plan's every_s is at least 30 s. */
export const COPY_SCHEDULE_TICK_MS = 5_000;

/** Copies each VM with a copy plan to its peers every every_s. */
@Injectable()
export class VmReplicationJob implements OnApplicationBootstrap {
  private readonly logger = new Logger('Copies');
  private running = false;

  constructor(
    private readonly replication: VmReplicationService,
    private readonly scheduler: SchedulerRegistry,
  ) {}

  onApplicationBootstrap(): void {
    this.scheduler.addInterval(
      'vm-copies',
      setInterval(() => void this.tick(), COPY_SCHEDULE_TICK_MS),
    );
  }

  async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.replication.copyDue();
    } catch (error) {
      this.logger.error(`scheduled copies failed: ${messageOf(error)}`);
    } finally {
      this.running = false;
    }
  }
}
