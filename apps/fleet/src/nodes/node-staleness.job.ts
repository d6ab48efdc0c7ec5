import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { STALENESS_SWEEP_INTERVAL_MS } from '@app/fleet-domain';
import { Leadership } from './leadership';
import { StoreUnavailableError } from './store-unavailable.error';
import { NodesService } from './nodes.service';

/**
 * Sweeps silent nodes out of the store (reads filter by age themselves; this frees the
 * memory), and ends RAM holds past their deadline (placement already ignores them; this gives
 * the RAM back in the listings). It sweeps once at start-up too: with a shared store, nodes
 * that went silent while no controller ran become silent nodes at once, VMs and all.
 * In etcd mode only the elected leader sweeps (reads judge age themselves on every controller).
 */
@Injectable()
export class NodeStalenessJob implements OnApplicationBootstrap {
  private readonly logger = new Logger('NodeStaleness');
  private running = false;

  constructor(
    private readonly nodes: NodesService,
    /** Absent (a unit test's job): it sweeps, as the sole controller. */
    private readonly leadership?: Leadership,
  ) {}

  onApplicationBootstrap(): void {
    void this.sweep();
  }

  @Interval('node-staleness', STALENESS_SWEEP_INTERVAL_MS)
  async sweep(): Promise<void> {
    // With several controllers on etcd, only the leader's sweep changes the store.
    if (this.running || this.leadership?.isLeader() === false) return;
    this.running = true;
    try {
      await this.nodes.dropStaleNodes();
      await this.nodes.endExpiredHolds();
    } catch (error) {
      // A store outage is logged once by the store's connection, not once a second here.
      if (error instanceof StoreUnavailableError) return;
      this.logger.error(
        `staleness sweep failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    } finally {
      this.running = false;
    }
  }
}
