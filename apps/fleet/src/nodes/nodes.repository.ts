import { NodeChange, NodeRecord, NodeState } from '@app/fleet-domain';

/**
 * A change would have its node come to hold VM ids (heldVmIds) that another stored node holds:
 * nothing was written. `owners`: each such VM id with a node holding it. Checked in the same
 * atomic step as the write, so of two nodes listing one new id at the same instant (through
 * two controllers), one holds it and the other's change is refused: a VM id is claimed for one
 * node. The heartbeat's service leaves those VMs out and tries again (see foreignVms).
 */
export class VmIdsHeldElsewhereError extends Error {
  constructor(
    readonly nodeId: string,
    readonly owners: ReadonlyMap<string, string>,
  ) {
    super(
      `node ${nodeId} would hold ${[...owners].map(([vmId, owner]) => `vm ${vmId} (held by node ${owner})`).join(', ')}; nothing written`,
    );
  }
}

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

  /**
   * Every node stored, whatever its age: the live ones, those silent for longer but not swept
   * yet, and those kept silent for their VMs (see keepsVmsWhenSilent). What lists VMs reads.
   */
  abstract listAll(): Promise<NodeState[]>;

  /**
   * Of `vmIds`, those a stored node other than `exceptNodeId` holds (heldVmIds: listed, kept
   * silent, or minted for a hold; the node live, silent or stale), each with such a node (when
   * two hold one id, the first the index names: the first that came to hold it, or, in Redis
   * after the index was made whole again from every node, the first in listAll's order): what
   * foreignVms judges a heartbeat by. Costs what `vmIds` cost, not a read of the whole store:
   * the store keeps an index of VM id to holding nodes with the records, written with them,
   * and checks each node it names against that node's state, so an entry left stale never
   * makes a VM foreign. (Redis reads every node instead while its index is not whole: see
   * RedisNodesRepository.)
   */
  abstract ownersOf(vmIds: readonly string[], exceptNodeId: string): Promise<Map<string, string>>;

  /**
   * Of `nodeIds`, those with a stored record, whatever its age (as listAll reads them). Here
   * from listAll; a store that can look them up one by one does.
   */
  async storedAmong(nodeIds: readonly string[]): Promise<Set<string>> {
    if (nodeIds.length === 0) return new Set();
    const wanted = new Set(nodeIds);
    const all = await this.listAll();
    return new Set(all.map((node) => node.node_id).filter((nodeId) => wanted.has(nodeId)));
  }

  /**
   * A number that changes with every write that may change the routing mesh's table: a node
   * stored, removed or swept (dropStale), or its address or its VMs' published ports changed
   * (routesAlike). A node ageing out without a write changes nothing here: MeshRoutes sees to
   * that. Undefined from a store other controllers write too: it cannot tell, so the table is
   * read again every second.
   */
  routesGeneration(): number | undefined {
    return undefined;
  }

  /**
   * Drops every node older than `notBeforeMs` out of the live reads and returns them: a node
   * keepsVmsWhenSilent keeps stays stored, silent (listAll, update), the others are removed.
   */
  abstract dropStale(notBeforeMs: number): Promise<NodeState[]>;

  /**
   * Forgets the nodes kept silent beyond the newest `keep` (see silentBeyond) and returns them.
   */
  abstract forgetSilentBeyond(keep: number): Promise<NodeState[]>;

  /**
   * Ids of the stored nodes holding RAM whose deadline is at or before `nowMs` (see
   * earliestHoldDeadline), found without reading every node: what the sweep ends.
   */
  abstract nodesWithExpiredHolds(nowMs: number): Promise<string[]>;

  /**
   * Gives `decide` the node's stored state (stale, or kept silent, or not; undefined when
   * there is none), stores the `next` it returns (if any; none at all with `remove`) and
   * answers its `result`, atomically: no other write to the node lands in between. `decide`
   * may be called again when one did. A node kept silent stays so unless `next` was received
   * later (a heartbeat): the other changes leave it out of the live reads. A `next` holding a
   * VM id its node did not hold that another stored node holds (as ownersOf judges) is not
   * written: VmIdsHeldElsewhereError, judged in the same atomic step.
   */
  abstract update<T>(nodeId: string, decide: NodeChange<T>): Promise<T>;
}
