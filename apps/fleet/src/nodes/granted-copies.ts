import { Injectable } from '@nestjs/common';
import type { HeartbeatReplica } from '@app/fleet-domain';

/** The most VMs whose issued copy peers are kept (a fleet's VMs; beyond it the oldest go). */
const MAX_VMS_KEPT = 100_000;

/**
 * Which nodes the copy planner granted to hold each VM's copy (the peers of the copy grants it
 * issued and pushed, with the grant's issued-at). A node's heartbeat `replicas` is taken only
 * for copies it was granted, or that its stored record already held (taken before: so a
 * controller restarted over Redis or etcd keeps them): a node can never claim a copy of a VM
 * it was never granted, to become its copy peer, restore source or recovery target.
 * Kept in memory, filled by this controller's planner and, in etcd mode (where only the leader
 * plans), from the grants the leader records in etcd before pushing them (SharedCopyGrants,
 * read every 5 s by GrantedCopiesJob): a follower refuses a node's report of a copy at most
 * until its next read, and never takes one no controller granted; a copy taken once is kept by
 * all (the stored record holds it). Read per heartbeat from the store instead, it would cost a
 * read each. In memory and Redis mode each controller plans and knows its own grants; a
 * restarted one rebuilds them from the plans it pushes again within one round (10 s).
 */
@Injectable()
export class GrantedCopies {
  /** vm_id -> peer node_id -> the grant's issued-at (controller's wall clock, ms). */
  private readonly issued = new Map<string, Map<string, number>>();

  /** The planner pushed a copy grant for `vmId` naming `peerId`, issued at `issuedAtWallMs`. */
  granted(vmId: string, peerId: string, issuedAtWallMs: number): void {
    let peers = this.issued.get(vmId);
    if (!peers) {
      if (this.issued.size >= MAX_VMS_KEPT) {
        this.issued.delete(this.issued.keys().next().value as string);
      }
      peers = new Map();
      this.issued.set(vmId, peers);
    }
    peers.set(peerId, Math.max(peers.get(peerId) ?? 0, issuedAtWallMs));
  }

  /** When the planner last granted `peerId` a copy of `vmId`; undefined: never (since start). */
  issuedAt(vmId: string, peerId: string): number | undefined {
    return this.issued.get(vmId)?.get(peerId);
  }

  /**
   * Of the copies node `nodeId` reports, those it was granted, or that its stored record
   * (`stored`) already held (the same VM from the same source).
   */
  keep(
    nodeId: string,
    reported: readonly HeartbeatReplica[],
    stored: readonly HeartbeatReplica[] | undefined,
  ): HeartbeatReplica[] {
    return reported.filter(
      (copy) =>
        this.issuedAt(copy.vm_id, nodeId) !== undefined ||
        (stored ?? []).some(
          (held) => held.vm_id === copy.vm_id && held.source_node_id === copy.source_node_id,
        ),
    );
  }
}
