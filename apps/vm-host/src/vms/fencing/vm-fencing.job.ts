import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { messageOf } from '../vms.errors';
import { VmFencing } from './vm-fencing.service';

/** The watchdog's pace: a protected VM runs at most about a second past its node's lease. */
export const FENCING_WATCH_INTERVAL_MS = 1_000;

/** Asks VmFencing each second whether the node's lease ran out (nothing to do while off). */
@Injectable()
export class VmFencingJob {
  private readonly logger = new Logger('Fencing');
  private running = false;

  constructor(private readonly fencing: VmFencing) {}

  @Interval('lease-watch', FENCING_WATCH_INTERVAL_MS)
  async watch(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.fencing.check();
    } catch (error) {
      this.logger.error(`fencing watch failed: ${messageOf(error)}`);
    } finally {
      this.running = false;
    }
  }
}
