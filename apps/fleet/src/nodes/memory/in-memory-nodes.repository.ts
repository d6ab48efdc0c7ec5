import { Injectable } from '@nestjs/common';
import {
  NodeChange,
  NodeRecord,
  NodeState,
  earliestHoldDeadline,
  heldVmIdChanges,
  heldVmIds,
  isLive,
  keepsVmsWhenSilent,
  liveSince,
  routesAlike,
  silentBeyond,
} from '@app/fleet-domain';
import { NodesRepository, VmIdsHeldElsewhereError } from '../nodes.repository';
import { VmHolderIndex } from './vm-holder-index';

/** How close to ageing out a node's write counts as bringing it back (leavesMeshTableUnchanged). */
const LIVE_MARGIN_MS = 5_000;

/** Nodes examined per slice of a sweep before the event loop gets a turn. */
const SWEEP_SLICE = 5_000;

/** The documented default: the fleet lives in this process and a restart forgets it. */
@Injectable()
export class InMemoryNodesRepository extends NodesRepository {
  private readonly nodes = new Map<string, NodeState>();
  /** Nodes dropped out while listing VMs, kept for those (see keepsVmsWhenSilent). */
  private readonly silent = new Map<string, NodeState>();
  /** Nodes holding RAM, so the sweep looks at these only. */
  private readonly holding = new Set<string>();
  /** Bumped by each write that may change the routing mesh's table (routesGeneration). */
  private generation = 0;

  /**
   * `vmHolders`: which nodes hold each VM id, kept with every change below, what ownersOf
   * reads (a test passes its own to see it).
   */
  constructor(private readonly vmHolders = new VmHolderIndex()) {
    super();
  }

  override routesGeneration(): number {
    return this.generation;
  }

  listLive(notBeforeMs: number): Promise<NodeState[]> {
    const live: NodeState[] = [];
    for (const state of this.nodes.values()) {
      if (state.received_at_ms >= notBeforeMs) live.push(state);
    }
    return Promise.resolve(live);
  }

  listLiveRecords(notBeforeMs: number): Promise<NodeRecord[]> {
    const records: NodeRecord[] = [];
    for (const state of this.nodes.values()) {
      if (state.received_at_ms >= notBeforeMs) records.push(state.record);
    }
    return Promise.resolve(records);
  }

  listAll(): Promise<NodeState[]> {
    return Promise.resolve([...this.nodes.values(), ...this.silent.values()]);
  }

  findLive(nodeId: string, notBeforeMs: number): Promise<NodeState | undefined> {
    return Promise.resolve(this.live(nodeId, notBeforeMs));
  }

  ownersOf(vmIds: readonly string[], exceptNodeId: string): Promise<Map<string, string>> {
    return Promise.resolve(this.owners(vmIds, exceptNodeId));
  }

  override storedAmong(nodeIds: readonly string[]): Promise<Set<string>> {
    return Promise.resolve(
      new Set(nodeIds.filter((nodeId) => this.nodes.has(nodeId) || this.silent.has(nodeId))),
    );
  }

  private owners(vmIds: readonly string[], exceptNodeId: string): Map<string, string> {
    const owners = new Map<string, string>();
    // Each holder's ids read once per call: a heartbeat may list many ids of one big node.
    const heldBy = new Map<string, ReadonlySet<string>>();
    const holds = (nodeId: string, vmId: string): boolean => {
      let held = heldBy.get(nodeId);
      if (held === undefined) {
        const state = this.nodes.get(nodeId) ?? this.silent.get(nodeId);
        held = new Set(state ? heldVmIds(state) : []);
        heldBy.set(nodeId, held);
      }
      return held.has(vmId);
    };
    for (const vmId of vmIds) {
      for (const nodeId of this.vmHolders.holdersOf(vmId)) {
        if (nodeId === exceptNodeId) continue;
        if (holds(nodeId, vmId)) {
          owners.set(vmId, nodeId);
          break;
        }
        // Never so while every change goes through this class; repaired should it ever be.
        this.vmHolders.remove(vmId, nodeId);
      }
    }
    return owners;
  }

  /**
   * Walks the store in slices, yielding to the event loop between them, so dropping a whole
   * fleet at once never holds up heartbeats. Each node is judged when it is reached: one that
   * beat meanwhile stays.
   */
  async dropStale(notBeforeMs: number): Promise<NodeState[]> {
    const dropped: NodeState[] = [];
    let examined = 0;
    for (const [nodeId, state] of this.nodes) {
      if (state.received_at_ms < notBeforeMs) {
        this.nodes.delete(nodeId);
        this.holding.delete(nodeId);
        if (keepsVmsWhenSilent(state)) this.silent.set(nodeId, state);
        else this.vmHolders.replace(nodeId, state, undefined);
        dropped.push(state);
      }
      if (++examined % SWEEP_SLICE === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    if (dropped.length > 0) this.generation++;
    return dropped;
  }

  forgetSilentBeyond(keep: number): Promise<NodeState[]> {
    if (this.silent.size <= keep) return Promise.resolve([]);
    const forgotten = silentBeyond([...this.silent.values()], keep);
    for (const state of forgotten) {
      this.silent.delete(state.node_id);
      this.vmHolders.replace(state.node_id, state, undefined);
    }
    return Promise.resolve(forgotten);
  }

  nodesWithExpiredHolds(nowMs: number): Promise<string[]> {
    const due: string[] = [];
    for (const nodeId of this.holding) {
      const deadline = earliestHoldDeadline(this.nodes.get(nodeId)!);
      if (deadline !== null && deadline <= nowMs) due.push(nodeId);
    }
    return Promise.resolve(due);
  }

  /**
   * Atomic as it is: the executor runs at once, so nothing else runs between the read and the
   * write; a decide that throws rejects the promise and writes nothing.
   */
  update<T>(nodeId: string, decide: NodeChange<T>): Promise<T> {
    return new Promise((resolve) => {
      const live = this.nodes.get(nodeId);
      // `silent` is looked up only for a node not in `nodes`, and only if any node is silent;
      // likewise `holding` below is touched only when it holds something (most writes).
      const silent =
        live === undefined && this.silent.size > 0 ? this.silent.get(nodeId) : undefined;
      const stored = live ?? silent;
      const { next, remove, result } = decide(stored);
      // Worked out once, for the check and the index alike.
      const changes = next && !remove ? heldVmIdChanges(stored, next) : undefined;
      if (changes) {
        const taken = this.owners(changes.gained, nodeId);
        if (taken.size > 0) throw new VmIdsHeldElsewhereError(nodeId, taken);
      }
      if (remove || next) {
        this.vmHolders.replace(nodeId, stored, remove ? undefined : next, changes);
      }
      const staysSilent =
        next !== undefined && silent !== undefined && next.received_at_ms === silent.received_at_ms;
      if (mayChangeMeshTable(stored, silent, next, remove, staysSilent)) this.generation++;
      if (remove) {
        this.nodes.delete(nodeId);
        this.silent.delete(nodeId);
        this.holding.delete(nodeId);
      } else if (next && staysSilent) {
        this.silent.set(nodeId, next);
      } else if (next) {
        if (silent !== undefined) this.silent.delete(nodeId);
        this.nodes.set(nodeId, next);
        if (earliestHoldDeadline(next) !== null) this.holding.add(nodeId);
        else if (this.holding.size > 0) this.holding.delete(nodeId);
      }
      resolve(result);
    });
  }

  private live(nodeId: string, notBeforeMs: number): NodeState | undefined {
    const state = this.nodes.get(nodeId);
    return state && state.received_at_ms >= notBeforeMs ? state : undefined;
  }
}

/**
 * Whether a write may change the routing mesh's table (routesGeneration): a node removed, a
 * silent one (`silent`) brought back, or a live one whose routes change. A silent node written
 * and staying silent (`staysSilent`: one of its VMs forgotten) changes nothing the table shows.
 */
function mayChangeMeshTable(
  stored: NodeState | undefined,
  silent: NodeState | undefined,
  next: NodeState | undefined,
  remove: boolean | undefined,
  staysSilent: boolean,
): boolean {
  if (remove) return true;
  if (next === undefined || staysSilent) return false;
  return silent !== undefined || !leavesMeshTableUnchanged(stored, next);
}

/**
 * Whether writing `next` over `stored` leaves the routing mesh's table as it is: the same
 * routes (routesAlike), and `stored` live by a margin (a table read while the heartbeat was on
 * its way may have left out a node about to age out).
 */
function leavesMeshTableUnchanged(stored: NodeState | undefined, next: NodeState): boolean {
  return (
    stored !== undefined &&
    isLive(stored, liveSince(next.received_at_ms) + LIVE_MARGIN_MS) &&
    routesAlike(stored, next)
  );
}
