import { NodeChange, NodeRecord, NodeState } from '@app/fleet-domain';

/**
 * Where the controller keeps its nodes: reads, the staleness sweep, and one atomic
 * read-decide-write. The store knows no rules; callers pass the change (see NodeChange in
 * @app/fleet-domain), so both stores apply exactly the same decisions.
 * `notBeforeMs` is the oldest receive time still live: no read returns anything older.
 */
export abstract class NodesRepository {
  abstract listLive(notBeforeMs: number): Promise<NodeState[]>;

  /** Only the records of live nodes: what the listings show, cheaper to fetch than whole states. */
  abstract listLiveRecords(notBeforeMs: number): Promise<NodeRecord[]>;

  abstract findLive(nodeId: string, notBeforeMs: number): Promise<NodeState | undefined>;

  /** Removes every node older than `notBeforeMs` and returns what it removed. */
  abstract dropStale(notBeforeMs: number): Promise<NodeState[]>;

  /**
   * Ids of the stored nodes holding RAM whose deadline is at or before `nowMs` (see
   * earliestHoldDeadline), found without reading every node: what the sweep ends.
   */
  abstract nodesWithExpiredHolds(nowMs: number): Promise<string[]>;

  /**
   * Gives `decide` the node's stored state (stale or not; undefined when there is none),
   * stores the `next` it returns (if any) and answers its `result`, atomically: no other
   * write to the node lands in between. `decide` may be called again when one did.
   */
  abstract update<T>(nodeId: string, decide: NodeChange<T>): Promise<T>;
}
