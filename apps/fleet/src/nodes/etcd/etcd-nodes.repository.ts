import { Logger } from '@nestjs/common';
import {
  NodeChange,
  NodeRecord,
  NodeState,
  earliestHoldDeadline,
  heldVmIdChanges,
  heldVmIds,
  keepsVmsWhenSilent,
  silentBeyond,
} from '@app/fleet-domain';
import { performance } from 'node:perf_hooks';
import { NodesRepository, VmIdsHeldElsewhereError } from '../nodes.repository';
import { StoreUnavailableError } from '../store-unavailable.error';
import {
  UnreadableStoredNodeError,
  decodeStoredNode,
  encodeStoredNode,
} from '../redis/stored-node';
import { EtcdClient } from './etcd.client';
import { EtcdCompare, EtcdKeyValue, EtcdOp, prefixEnd } from './etcd-wire';

export const ETCD_PREFIX = 'ppn-fleet/';
/** A node: "e\n<record json>\n<state json>" (stored-node.ts's shape; etcd's mod_revision is the version). */
const NODES = `${ETCD_PREFIX}node/`;
/** A node kept silent for its VMs (see keepsVmsWhenSilent): its receive time when it was kept. */
const SILENT = `${ETCD_PREFIX}silent/`;
/**
 * The VM id index: one empty key per (VM id, holding node), written in the same txn as the
 * node, what ownersOf reads instead of every node (ids hold no "/", see ID_PATTERN).
 */
const VM_HOLDERS = `${ETCD_PREFIX}vm/`;
const nodeKey = (nodeId: string) => `${NODES}${nodeId}`;
const silentKey = (nodeId: string) => `${SILENT}${nodeId}`;
const holdersPrefix = (vmId: string) => `${VM_HOLDERS}${vmId}/`;
const holderKey = (vmId: string, nodeId: string) => `${holdersPrefix(vmId)}${nodeId}`;

const WRITE_ATTEMPTS = 20;
/** Reads per txn: etcd's --max-txn-ops is 128 by default. */
const READS_PER_TXN = 100;
const UNREADABLE_LOG_INTERVAL_MS = 60_000;

/** A node's value as stored here. */
export function encodeEtcdNode(state: NodeState): string {
  return `e\n${encodeStoredNode(state)}`;
}

interface Stored {
  state?: NodeState;
  modRevision: number;
}

/**
 * Fleet state in etcd (VM_FLEET_ETCD_ENDPOINTS), shared by every controller on it, with the
 * same semantics as memory and Redis: the caller's NodeChange decides every write, applied by
 * a txn that compares the node's mod_revision with the one read (and, for each VM id the node
 * comes to hold, that no holder of it was written since the read), so it lands whole or not
 * at all. Listings and the sweep read every node (one range; no sorted index as in Redis):
 * cost grows with the fleet, fine for the hundreds of nodes a small fleet has.
 */
export class EtcdNodesRepository extends NodesRepository {
  private readonly logger = new Logger('etcd');
  private unreadableSkipped = 0;
  private unreadableLoggedAt = -Infinity;

  constructor(private readonly etcd: EtcdClient) {
    super();
  }

  async listLive(notBeforeMs: number): Promise<NodeState[]> {
    return (await this.readLive()).filter((state) => state.received_at_ms >= notBeforeMs);
  }

  async listLiveRecords(notBeforeMs: number): Promise<NodeRecord[]> {
    return (await this.listLive(notBeforeMs)).map((state) => state.record);
  }

  async findLive(nodeId: string, notBeforeMs: number): Promise<NodeState | undefined> {
    const { ranges } = await this.etcd.txn(
      [],
      [{ range: { key: nodeKey(nodeId) } }, { range: { key: silentKey(nodeId) } }],
    );
    if (ranges[1].length > 0) return undefined;
    const state = this.readable(ranges[0])[0];
    return state && state.received_at_ms >= notBeforeMs ? state : undefined;
  }

  async listAll(): Promise<NodeState[]> {
    return this.readable((await this.etcd.rangePrefix(NODES)).kvs);
  }

  /** Nodes not kept silent, from one snapshot. */
  private async readLive(): Promise<NodeState[]> {
    const { live } = await this.snapshot();
    return live.map(({ state }) => state);
  }

  /** Every node, each with its mod_revision, split into live and silent, at one revision. */
  private async snapshot(): Promise<{
    live: Array<{ state: NodeState; modRevision: number }>;
    silent: Array<{ state: NodeState; modRevision: number }>;
  }> {
    const { ranges } = await this.etcd.txn(
      [],
      [
        { range: { key: NODES, rangeEnd: prefixEnd(NODES) } },
        { range: { key: SILENT, rangeEnd: prefixEnd(SILENT), keysOnly: true } },
      ],
    );
    const silentIds = new Set(ranges[1].map((kv) => kv.key.slice(SILENT.length)));
    const live: Array<{ state: NodeState; modRevision: number }> = [];
    const silent: Array<{ state: NodeState; modRevision: number }> = [];
    for (const kv of ranges[0]) {
      const state = this.readable([kv])[0];
      if (!state) continue;
      (silentIds.has(state.node_id) ? silent : live).push({ state, modRevision: kv.modRevision });
    }
    return { live, silent };
  }

  async ownersOf(vmIds: readonly string[], exceptNodeId: string): Promise<Map<string, string>> {
    if (vmIds.length === 0) return new Map();
    return this.ownersAt(vmIds, exceptNodeId);
  }

  /**
   * From the index, each holder checked against its stored state (an entry left stale never
   * makes a VM foreign), every read at `revision` (the latest if none).
   */
  private async ownersAt(
    vmIds: readonly string[],
    exceptNodeId: string,
    revision?: number,
  ): Promise<Map<string, string>> {
    const holders = new Map<string, string[]>();
    for (let first = 0; first < vmIds.length; first += READS_PER_TXN) {
      const batch = vmIds.slice(first, first + READS_PER_TXN);
      const { ranges, revision: read } = await this.etcd.txn(
        [],
        batch.map((vmId) => ({
          range: {
            key: holdersPrefix(vmId),
            rangeEnd: prefixEnd(holdersPrefix(vmId)),
            keysOnly: true,
            revision,
          },
        })),
      );
      revision ??= read;
      batch.forEach((vmId, index) =>
        holders.set(
          vmId,
          ranges[index]
            .map((kv) => kv.key.slice(holdersPrefix(vmId).length))
            .filter((nodeId) => nodeId !== exceptNodeId),
        ),
      );
    }
    const named = [...new Set([...holders.values()].flat())];
    const held = new Map<string, Set<string>>();
    for (let first = 0; first < named.length; first += READS_PER_TXN) {
      const batch = named.slice(first, first + READS_PER_TXN);
      const { ranges } = await this.etcd.txn(
        [],
        batch.map((nodeId) => ({ range: { key: nodeKey(nodeId), revision } })),
      );
      batch.forEach((nodeId, index) => {
        const state = this.readable(ranges[index])[0];
        held.set(nodeId, new Set(state ? heldVmIds(state) : []));
      });
    }
    const owners = new Map<string, string>();
    for (const [vmId, nodeIds] of holders) {
      const owner = nodeIds.find((nodeId) => held.get(nodeId)?.has(vmId));
      if (owner !== undefined) owners.set(vmId, owner);
    }
    return owners;
  }

  async dropStale(notBeforeMs: number): Promise<NodeState[]> {
    const dropped: NodeState[] = [];
    for (const { state, modRevision } of (await this.snapshot()).live) {
      if (state.received_at_ms >= notBeforeMs) continue;
      const keep = keepsVmsWhenSilent(state);
      const ops: EtcdOp[] = keep
        ? [{ put: { key: silentKey(state.node_id), value: String(state.received_at_ms) } }]
        : this.forgetOps(state);
      // A node written since (it beat meanwhile) is judged again at the next sweep.
      const { succeeded } = await this.etcd.txn(
        [{ key: nodeKey(state.node_id), target: 'MOD', result: 'EQUAL', revision: modRevision }],
        ops,
      );
      if (succeeded) dropped.push(state);
    }
    return dropped;
  }

  async forgetSilentBeyond(keep: number): Promise<NodeState[]> {
    const { silent } = await this.snapshot();
    if (silent.length <= keep) return [];
    const revisions = new Map(silent.map(({ state, modRevision }) => [state.node_id, modRevision]));
    const forgotten: NodeState[] = [];
    for (const state of silentBeyond(
      silent.map(({ state }) => state),
      keep,
    )) {
      const { succeeded } = await this.etcd.txn(
        [
          {
            key: nodeKey(state.node_id),
            target: 'MOD',
            result: 'EQUAL',
            revision: revisions.get(state.node_id)!,
          },
        ],
        this.forgetOps(state),
      );
      if (succeeded) forgotten.push(state);
    }
    return forgotten;
  }

  async nodesWithExpiredHolds(nowMs: number): Promise<string[]> {
    return (await this.readLive())
      .filter((state) => {
        const deadline = earliestHoldDeadline(state);
        return deadline !== null && deadline <= nowMs;
      })
      .map((state) => state.node_id);
  }

  /** Deletes a node, its silent mark and its VM ids from the index. */
  private forgetOps(state: NodeState): EtcdOp[] {
    return [
      { deleteRange: { key: nodeKey(state.node_id) } },
      { deleteRange: { key: silentKey(state.node_id) } },
      ...heldVmIds(state).map((vmId) => ({
        deleteRange: { key: holderKey(vmId, state.node_id) },
      })),
    ];
  }

  /**
   * Read, decide, compare-and-set on the node's mod_revision (and its silent mark's); again
   * from the top when another controller wrote first. A value it cannot read is never
   * overwritten: the change fails (UnreadableStoredNodeError).
   */
  async update<T>(nodeId: string, decide: NodeChange<T>): Promise<T> {
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const read = await this.etcd.txn(
        [],
        [{ range: { key: nodeKey(nodeId) } }, { range: { key: silentKey(nodeId) } }],
      );
      const stored = this.decode(read.ranges[0][0]);
      const silentMark = read.ranges[1][0];
      const unchanged: EtcdCompare[] = [
        { key: nodeKey(nodeId), target: 'MOD', result: 'EQUAL', revision: stored.modRevision },
        {
          key: silentKey(nodeId),
          target: 'MOD',
          result: 'EQUAL',
          revision: silentMark?.modRevision ?? 0,
        },
      ];
      const { next, remove, result } = decide(stored.state);
      if (remove) {
        if (!stored.state) return result;
        const { succeeded } = await this.etcd.txn(unchanged, this.forgetOps(stored.state));
        if (succeeded) return result;
        continue;
      }
      if (!next) return result;
      const { gained, lost } = heldVmIdChanges(stored.state, next);
      if (gained.length > 0) {
        const taken = await this.ownersAt(gained, nodeId, read.revision);
        if (taken.size > 0) throw new VmIdsHeldElsewhereError(nodeId, taken);
      }
      // Kept silent unless `next` was received later than when it was kept (a heartbeat).
      const staysSilent =
        silentMark !== undefined && Number(silentMark.value) === next.received_at_ms;
      const ops: EtcdOp[] = [
        { put: { key: nodeKey(nodeId), value: encodeEtcdNode(next) } },
        ...gained.map((vmId) => ({ put: { key: holderKey(vmId, nodeId), value: '' } })),
        ...lost.map((vmId) => ({ deleteRange: { key: holderKey(vmId, nodeId) } })),
        ...(silentMark && !staysSilent ? [{ deleteRange: { key: silentKey(nodeId) } }] : []),
      ];
      const { succeeded } = await this.etcd.txn(
        [
          ...unchanged,
          // No holder of a gained id was written since the read that found none.
          ...gained.map((vmId): EtcdCompare => ({
            key: holdersPrefix(vmId),
            rangeEnd: prefixEnd(holdersPrefix(vmId)),
            target: 'MOD',
            result: 'LESS',
            revision: read.revision + 1,
          })),
        ],
        ops,
      );
      if (succeeded) return result;
    }
    throw new StoreUnavailableError(
      `node ${nodeId} changed under ${WRITE_ATTEMPTS} concurrent writes in a row; try again`,
    );
  }

  private decode(kv: EtcdKeyValue | undefined): Stored {
    if (!kv) return { modRevision: 0 };
    return { state: decodeStoredNode(kv.value).state, modRevision: kv.modRevision };
  }

  /** The states of `kvs` that can be read; one that cannot is left out, in a warning line. */
  private readable(kvs: EtcdKeyValue[]): NodeState[] {
    const read: NodeState[] = [];
    for (const kv of kvs) {
      try {
        read.push(decodeStoredNode(kv.value).state!);
      } catch (error) {
        if (!(error instanceof UnreadableStoredNodeError)) throw error;
        this.unreadableSkipped++;
        const now = performance.now();
        if (now - this.unreadableLoggedAt < UNREADABLE_LOG_INTERVAL_MS) continue;
        this.logger.warn(
          `left out ${this.unreadableSkipped} read(s) of node keys in etcd that are no node state (last: ${error.message})`,
        );
        this.unreadableSkipped = 0;
        this.unreadableLoggedAt = now;
      }
    }
    return read;
  }
}
