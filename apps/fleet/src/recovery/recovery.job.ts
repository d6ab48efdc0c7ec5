import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { StoreUnavailableError } from '../nodes/store-unavailable.error';
import { RecoveryService } from './recovery.service';

/** How often the leader looks for lapsed nodes. */
export const RECOVERY_PASS_MS = 5_000;

/** Triggers the leader's recovery pass; a pass still running (a long restore) is not doubled. */
@Injectable()
export class RecoveryJob {
  private readonly logger = new Logger('Recovery');
  private running = false;

  constructor(private readonly recovery: RecoveryService) {}

  @Interval('recovery', RECOVERY_PASS_MS)
  async pass(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.recovery.recoverLapsedNodes();
    } catch (error) {
      // etcd's outage (its majority lost) is logged by its connection: recovery waits for it.
      if (error instanceof StoreUnavailableError) return;
      this.logger.error(
        `recovery pass failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    } finally {
      this.running = false;
    }
  }
}
