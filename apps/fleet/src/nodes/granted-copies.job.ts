import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { GrantedCopies } from './granted-copies';
import { SharedCopyGrants } from './shared-copy-grants';
import { StoreUnavailableError } from './store-unavailable.error';

/** How often a controller learns the copy grants recorded in the store (etcd mode). */
export const GRANTS_READ_INTERVAL_MS = 5_000;

/**
 * etcd mode: every controller, leader or not, takes into its GrantedCopies the grants the
 * leader's planner recorded in etcd (only the leader plans), so whichever controller a peer's
 * heartbeat reaches takes its report of a copy it was granted, at worst one read late (5 s;
 * the report comes again with the next heartbeat). Memory and Redis: nothing to read.
 */
@Injectable()
export class GrantedCopiesJob implements OnApplicationBootstrap {
  private readonly logger = new Logger('Copies');
  private running = false;

  constructor(
    private readonly granted: GrantedCopies,
    private readonly shared: SharedCopyGrants,
  ) {}

  onApplicationBootstrap(): void {
    void this.read();
  }

  @Interval('granted-copies', GRANTS_READ_INTERVAL_MS)
  async read(): Promise<void> {
    if (!this.shared.shared || this.running) return;
    this.running = true;
    try {
      for (const grant of await this.shared.since()) {
        this.granted.granted(grant.vmId, grant.peerId, grant.issuedAtWallMs);
      }
    } catch (error) {
      // A store outage is logged once by the store's connection.
      if (!(error instanceof StoreUnavailableError)) {
        this.logger.warn(`copy grants not read from the store: ${(error as Error).message}`);
      }
    } finally {
      this.running = false;
    }
  }
}
