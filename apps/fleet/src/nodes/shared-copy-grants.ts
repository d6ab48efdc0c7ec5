/** A copy grant recorded for every controller: peer `peerId` may hold a copy of `vmId`. */
export interface RecordedGrant {
  vmId: string;
  peerId: string;
  /** The grant's issued-at (the leader's wall clock, ms). */
  issuedAtWallMs: number;
}

/**
 * The copy grants the copy planner issues, shared by every controller on the store, so a
 * controller that does not plan (a follower in etcd mode: only the leader plans) still takes
 * a node's report of a copy the leader granted it (GrantedCopies). Memory and Redis: nothing
 * shared (NoSharedCopyGrants), each controller plans and knows its own grants, as before.
 */
export abstract class SharedCopyGrants {
  /** Whether there is anything to share (etcd): else record and since do nothing. */
  abstract readonly shared: boolean;
  /**
   * Records the peers granted copies of `vmId` now, before the plan carrying the grants is
   * pushed: a peer can hold and report a copy only once every controller can learn it was granted.
   */
  abstract record(vmId: string, grants: readonly RecordedGrant[]): Promise<void>;
  /** The grants recorded since the last call (every recorded one at the first). */
  abstract since(): Promise<RecordedGrant[]>;
}

export class NoSharedCopyGrants extends SharedCopyGrants {
  readonly shared = false;
  record(): Promise<void> {
    return Promise.resolve();
  }
  since(): Promise<RecordedGrant[]> {
    return Promise.resolve([]);
  }
}
