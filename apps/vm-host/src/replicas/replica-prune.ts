import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { ReplicasService } from './replicas.service';

/** How long a copy of a VM the fleet no longer has is kept (restorable meanwhile). */
export const UNWANTED_REPLICA_GRACE_MS = 24 * 3_600_000;

/**
 * Copies of VMs the fleet no longer has (deleted, or forgotten with their dead node): each
 * heartbeat answer lists which of the copies reported are still wanted; one left out of every
 * answer for 24 h on end (this agent's monotonic clock; an answer listing it again, or an agent
 * restart, starts over) is removed, its folder with every chain. Meanwhile it stays reported,
 * and restorable (`vm restore <vm_id>`), as a deleted VM's disk stays for its retention.
 */
@Injectable()
export class ReplicaPrune {
  private readonly logger = new Logger('Replicas');
  /** VM id -> when (Clock.now) an answer first left its copy out. */
  private readonly unwantedSince = new Map<string, number>();

  constructor(
    private readonly replicas: ReplicasService,
    private readonly clock: Clock,
  ) {}

  /**
   * One answer's word: `reported` the VM ids of the copies the heartbeat reported, `wanted`
   * those the controller still wants. The VM ids removed.
   */
  async judge(reported: readonly string[], wanted: readonly string[]): Promise<string[]> {
    const nowMs = this.clock.now();
    const keep = new Set(wanted);
    const removed: string[] = [];
    for (const vmId of [...this.unwantedSince.keys()]) {
      if (keep.has(vmId) || !reported.includes(vmId)) this.unwantedSince.delete(vmId);
    }
    for (const vmId of reported) {
      if (keep.has(vmId)) continue;
      const since = this.unwantedSince.get(vmId);
      if (since === undefined) {
        this.unwantedSince.set(vmId, nowMs);
        this.logger.log(
          `vm ${vmId}: the fleet no longer has it; its copy here is removed in ${UNWANTED_REPLICA_GRACE_MS / 3_600_000} h unless it comes back (restorable meanwhile)`,
        );
        continue;
      }
      if (nowMs - since < UNWANTED_REPLICA_GRACE_MS) continue;
      await this.replicas.folder.remove(this.replicas.folder.vmDir(vmId));
      this.unwantedSince.delete(vmId);
      removed.push(vmId);
      this.logger.warn(
        `vm ${vmId}: its copy removed: the fleet has not had the VM for ${UNWANTED_REPLICA_GRACE_MS / 3_600_000} h`,
      );
    }
    return removed;
  }
}
