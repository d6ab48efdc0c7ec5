import {
  BeforeApplicationShutdown,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { FleetMetrics } from '../metrics/fleet-metrics.service';
import { LEADERSHIP_TICK_MS, Leadership } from './leadership';

/**
 * Campaigns for the leadership (etcd mode), or keeps it, every LEADERSHIP_TICK_MS, and shows it
 * in ppn_fleet_leader; on a clean stop gives it up first, so another controller takes over at
 * once instead of at the lease's end.
 */
@Injectable()
export class LeadershipJob implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Leadership');

  constructor(
    private readonly leadership: Leadership,
    private readonly metrics: FleetMetrics,
  ) {}

  onApplicationBootstrap(): void {
    void this.tick();
  }

  @Interval('leadership', LEADERSHIP_TICK_MS)
  async tick(): Promise<void> {
    try {
      await this.leadership.tick();
    } catch (error) {
      this.logger.error(
        `leadership tick failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    this.metrics.setLeader(this.leadership.isLeader());
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.leadership.resign().catch(() => undefined);
  }
}
