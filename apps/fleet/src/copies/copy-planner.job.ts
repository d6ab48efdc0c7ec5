import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { CopyPlannerService } from './copy-planner.service';

/** How often the VMs' copy plans are looked at (a new node, a node gone, grants to renew). */
export const COPY_PLAN_INTERVAL_MS = 10_000;

/** Every controller ticks; in etcd mode only the elected leader plans (CopyPlannerService.planAll). */
@Injectable()
export class CopyPlannerJob {
  private readonly logger = new Logger('Copies');
  private running = false;

  constructor(private readonly planner: CopyPlannerService) {}

  @Interval('copy-planner', COPY_PLAN_INTERVAL_MS)
  async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.planner.planAll();
    } catch (error) {
      this.logger.warn(`copy plans not looked at: ${(error as Error).message}`);
    } finally {
      this.running = false;
    }
  }
}
