import {
  HeartbeatVerdict,
  NodeHeartbeat,
  NodeRecord,
  NodeState,
  VmRecord,
} from '@app/fleet-domain';

/**
 * Where the controller keeps its nodes. Asynchronous so that a shared store can stand behind
 * it; each method is one atomic change, so two requests never interleave inside one.
 * `notBeforeMs` is the oldest receive time still live: no read returns anything older.
 */
export abstract class NodesRepository {
  /** Judges the heartbeat against the stored record and replaces it, unless out of order. */
  abstract applyHeartbeat(
    heartbeat: NodeHeartbeat,
    receivedAtMs: number,
  ): Promise<HeartbeatVerdict>;

  abstract listLive(notBeforeMs: number): Promise<NodeState[]>;

  /** Only the records of live nodes: what the listings show, cheaper to fetch than whole states. */
  abstract listLiveRecords(notBeforeMs: number): Promise<NodeRecord[]>;

  abstract findLive(nodeId: string, notBeforeMs: number): Promise<NodeState | undefined>;

  /** Removes every node older than `notBeforeMs` and returns what it removed. */
  abstract dropStale(notBeforeMs: number): Promise<NodeState[]>;

  /**
   * Holds `ramMb` on a live node for a VM being dispatched, if it still has `requiredFreeMb`
   * available. False when the node is gone or no longer has room.
   */
  abstract hold(
    nodeId: string,
    holdId: string,
    ramMb: number,
    requiredFreeMb: number,
    notBeforeMs: number,
  ): Promise<boolean>;

  /** The agent accepted the VM: list it on the node; its RAM stays held until the next heartbeat. */
  abstract recordDispatchedVm(nodeId: string, holdId: string, vm: VmRecord): Promise<void>;

  /** The dispatch failed: give the held RAM back. */
  abstract releaseHold(nodeId: string, holdId: string): Promise<void>;

  /** The agent destroyed the VM: it leaves the listing now. */
  abstract removeVm(nodeId: string, vmId: string): Promise<void>;
}
