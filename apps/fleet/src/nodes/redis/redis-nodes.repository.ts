import { Logger } from '@nestjs/common';
import {
  NODE_STALE_AFTER_MS,
  NodeChange,
  NodeRecord,
  NodeState,
  earliestHoldDeadline,
  heldVmIdChanges,
  heldVmIds,
  keepsVmsWhenSilent,
  vmOwnersAmong,
} from '@app/fleet-domain';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { StoreUnavailableError } from '../store-unavailable.error';
import { RedisConnection } from './redis-connection';
import {
  UnreadableStoredNodeError,
  decodeStoredNode,
  decodeStoredRecord,
  decodeStoredState,
  encodeStoredNode,
} from './stored-node';
import { NodesRepository, VmIdsHeldElsewhereError } from '../nodes.repository';
import {
  FORGET_BATCH,
  FORGET_BATCH_BYTES,
  HOLD_DEADLINES,
  INDEX,
  INDEXED_WRITES,
  INDEX_BATCH,
  INDEX_INTERVAL_MS,
  NODE_KEY_TTL_MS,
  OWNERS_BATCH_BYTES,
  PREFIX,
  SILENT,
  SWEEP_BATCH,
  UNREADABLE_LOG_INTERVAL_MS,
  VERSIONS,
  VM_HOLDERS,
  WRITE_ATTEMPTS,
  nodeKey,
} from './redis-nodes.keys';
import {
  ADD_VM_HOLDERS,
  DROP_STALE,
  FIND_LIVE,
  FORGET_SILENT,
  FleetRedis,
  HOLDS_DUE,
  LIST_ALL,
  LIST_LIVE,
  OWNERS_OF,
  PUT,
  REMOVE,
} from './redis-nodes.scripts';

/**
 * Fleet state in Redis, shared by every controller on it (VM_FLEET_REDIS_URL). Same
 * semantics as the in-memory store: the caller's NodeChange decides every write.
 */
export class RedisNodesRepository extends NodesRepository {
  private readonly redis: FleetRedis;
  private readonly logger = new Logger('Redis');
  /** Unreadable keys skipped since the last line about them, and when that line was logged. */
  private unreadableSkipped = 0;
  private unreadableLoggedAt = -Infinity;
  /** The making-whole of VM_HOLDERS under way in this process, and when the last began. */
  private indexing?: Promise<boolean>;
  private indexedAt = -Infinity;

  constructor(private readonly connection: RedisConnection) {
    super();
    const client = connection.client;
    client.defineCommand('fleetPut', { numberOfKeys: 7, lua: PUT });
    client.defineCommand('fleetRemove', { numberOfKeys: 5, lua: REMOVE });
    client.defineCommand('fleetListAll', { numberOfKeys: 4, lua: LIST_ALL });
    client.defineCommand('fleetForgetSilent', { numberOfKeys: 2, lua: FORGET_SILENT });
    client.defineCommand('fleetListLive', { numberOfKeys: 1, lua: LIST_LIVE });
    client.defineCommand('fleetFindLive', { numberOfKeys: 2, lua: FIND_LIVE });
    client.defineCommand('fleetDropStale', { numberOfKeys: 4, lua: DROP_STALE });
    client.defineCommand('fleetHoldsDue', { numberOfKeys: 1, lua: HOLDS_DUE });
    client.defineCommand('fleetOwnersOf', { numberOfKeys: 3, lua: OWNERS_OF });
    client.defineCommand('fleetAddVmHolders', { numberOfKeys: 3, lua: ADD_VM_HOLDERS });
    this.redis = client as FleetRedis;
  }

  async listLive(notBeforeMs: number): Promise<NodeState[]> {
    const stored = await this.connection.run(() =>
      this.redis.fleetListLive(INDEX, notBeforeMs, `${PREFIX}node:`, 'states'),
    );
    return this.readable(stored, decodeStoredState);
  }

  async listLiveRecords(notBeforeMs: number): Promise<NodeRecord[]> {
    const records = await this.connection.run(() =>
      this.redis.fleetListLive(INDEX, notBeforeMs, `${PREFIX}node:`, 'records'),
    );
    return this.readable(records, decodeStoredRecord);
  }

  async listAll(): Promise<NodeState[]> {
    return (await this.listAllWithWrites()).states;
  }

  /** listAll, with VERSIONS - INDEXED_WRITES as of the same snapshot. */
  private async listAllWithWrites(): Promise<{ states: NodeState[]; unindexedWrites: number }> {
    const [writes, indexedWrites, ...stored] = await this.connection.run(() =>
      this.redis.fleetListAll(INDEX, SILENT, VERSIONS, INDEXED_WRITES, `${PREFIX}node:`),
    );
    return {
      states: this.readable(stored, decodeStoredState),
      unindexedWrites: Number(writes) - Number(indexedWrites),
    };
  }

  /**
   * From VM_HOLDERS, each holder checked against its state; every node read instead (as the
   * version before the index did) while VM_HOLDERS may miss a write, until it is made whole.
   */
  async ownersOf(vmIds: readonly string[], exceptNodeId: string): Promise<Map<string, string>> {
    if (vmIds.length === 0) return new Map();
    let owners = await this.ownersFromIndex(vmIds, exceptNodeId);
    if (owners === null && (await this.indexVmHoldersOnce())) {
      owners = await this.ownersFromIndex(vmIds, exceptNodeId);
    }
    return owners ?? vmOwnersAmong(await this.listAll(), vmIds, exceptNodeId);
  }

  /**
   * null while VM_HOLDERS may miss a write. Redis checks each holder against its state and
   * answers owner ids only, in scripts of at most OWNERS_BATCH_BYTES of states read each.
   */
  private async ownersFromIndex(
    vmIds: readonly string[],
    exceptNodeId: string,
  ): Promise<Map<string, string> | null> {
    const owners = new Map<string, string>();
    for (let first = 0; first < vmIds.length;) {
      const found = await this.connection.run(() =>
        this.redis.fleetOwnersOf(
          VM_HOLDERS,
          VERSIONS,
          INDEXED_WRITES,
          `${PREFIX}node:`,
          exceptNodeId,
          OWNERS_BATCH_BYTES,
          ...vmIds.slice(first),
        ),
      );
      if (found === null) return null;
      const [done, ...pairs] = found;
      for (let index = 0; index < pairs.length; index += 2) {
        owners.set(pairs[index], pairs[index + 1]);
      }
      first += Number(done);
    }
    return owners;
  }

  /**
   * Makes VM_HOLDERS whole from every record (one at a time in this process, and at most once
   * per INDEX_INTERVAL_MS): the first lookup after this version opens a store an earlier one
   * wrote, or after such a version wrote to it. True when it is whole.
   */
  private indexVmHoldersOnce(): Promise<boolean> {
    if (this.indexing) return this.indexing;
    const now = performance.now();
    if (now - this.indexedAt < INDEX_INTERVAL_MS) return Promise.resolve(false);
    this.indexedAt = now;
    this.indexing = this.indexVmHolders()
      .catch((error: unknown) => {
        // Redis went away meanwhile: tried again at the next lookup, not INDEX_INTERVAL_MS later.
        this.indexedAt = -Infinity;
        throw error;
      })
      .finally(() => (this.indexing = undefined));
    return this.indexing;
  }

  private async indexVmHolders(): Promise<boolean> {
    const { states, unindexedWrites } = await this.listAllWithWrites();
    const pairs: string[] = [];
    for (const state of states)
      for (const vmId of heldVmIds(state)) pairs.push(vmId, state.node_id);
    if (states.length > 0) {
      this.logger.log(
        `indexing the ${pairs.length / 2} VM id(s) of ${states.length} stored node(s) by the node holding each, once: the store had no whole index yet (new, written by an earlier version, or deleted), or a controller of an earlier version wrote to it`,
      );
    }
    const making = randomUUID();
    for (let first = 0; ; first += 2 * INDEX_BATCH) {
      const last = first + 2 * INDEX_BATCH >= pairs.length;
      const batch = pairs.slice(first, first + 2 * INDEX_BATCH);
      const added = await this.connection.run(() =>
        this.redis.fleetAddVmHolders(
          VM_HOLDERS,
          VERSIONS,
          INDEXED_WRITES,
          making,
          first === 0 ? 'first' : '',
          last ? unindexedWrites : '',
          ...batch,
        ),
      );
      // VM_HOLDERS deleted halfway (or another controller began again): not whole, retried.
      if (added === -1) return false;
      if (!last) continue;
      if (added !== 1) {
        this.logger.warn(
          `a controller of an earlier version writes to this Redis without the index of VM ids by node: until every controller on it is upgraded, a heartbeat listing a VM id its node did not hold reads every node (retried every ${INDEX_INTERVAL_MS / 1000} s)`,
        );
      }
      return added === 1;
    }
  }

  /** In batches (FORGET_BATCH), each bounded, until no more are beyond `keep`. */
  async forgetSilentBeyond(keep: number): Promise<NodeState[]> {
    const forgotten: NodeState[] = [];
    for (;;) {
      const [more, ...batch] = await this.connection.run(() =>
        this.redis.fleetForgetSilent(
          SILENT,
          VM_HOLDERS,
          keep,
          `${PREFIX}node:`,
          FORGET_BATCH,
          FORGET_BATCH_BYTES,
        ),
      );
      forgotten.push(...this.readable(batch, decodeStoredState));
      if (Number(more) === 0) return forgotten;
    }
  }

  async findLive(nodeId: string, notBeforeMs: number): Promise<NodeState | undefined> {
    const stored = await this.connection.run(() =>
      this.redis.fleetFindLive(nodeKey(nodeId), INDEX, notBeforeMs, nodeId),
    );
    return this.readable([stored], (value) => decodeStoredNode(value).state)[0];
  }

  async dropStale(notBeforeMs: number): Promise<NodeState[]> {
    const dropped: NodeState[] = [];
    for (;;) {
      const batch = await this.connection.run(() =>
        this.redis.fleetDropStale(
          INDEX,
          HOLD_DEADLINES,
          SILENT,
          VM_HOLDERS,
          notBeforeMs,
          `${PREFIX}node:`,
          SWEEP_BATCH,
        ),
      );
      dropped.push(...this.readable(batch, decodeStoredState));
      if (batch.length < SWEEP_BATCH) return dropped;
    }
  }

  nodesWithExpiredHolds(nowMs: number): Promise<string[]> {
    return this.connection.run(() =>
      this.redis.fleetHoldsDue(HOLD_DEADLINES, nowMs, `${PREFIX}node:`, SWEEP_BATCH),
    );
  }

  /**
   * The values `decode` can read. A key something else wrote (or a controller of another
   * version, in a shape this one cannot read) is left out, not thrown: one bad key must not
   * fail every listing and create. It is dropped like any node that stops being written.
   */
  private readable<S, T>(values: S[], decode: (value: S) => T): T[] {
    const read: T[] = [];
    for (const value of values) {
      try {
        read.push(decode(value));
      } catch (error) {
        if (!(error instanceof UnreadableStoredNodeError)) throw error;
        this.skippedUnreadable(error);
      }
    }
    return read;
  }

  private skippedUnreadable(error: UnreadableStoredNodeError): void {
    this.unreadableSkipped++;
    const now = performance.now();
    if (now - this.unreadableLoggedAt < UNREADABLE_LOG_INTERVAL_MS) return;
    this.logger.warn(
      `left out ${this.unreadableSkipped} read(s) of node keys in Redis that are no node state (last: ${error.message}); each is dropped ${NODE_STALE_AFTER_MS / 1000} s after its last write`,
    );
    this.unreadableSkipped = 0;
    this.unreadableLoggedAt = now;
  }

  /**
   * Read, decide, compare-and-set; again from the top when another controller wrote first. A
   * key it cannot read is never overwritten: the change fails (UnreadableStoredNodeError).
   */
  async update<T>(nodeId: string, decide: NodeChange<T>): Promise<T> {
    const key = nodeKey(nodeId);
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const { version, state } = decodeStoredNode(
        await this.connection.run(() => this.redis.get(key)),
      );
      const { next, remove, result } = decide(state);
      if (remove) {
        const held = state ? heldVmIds(state) : [];
        const removed = await this.connection.run(() =>
          this.redis.fleetRemove(
            key,
            INDEX,
            HOLD_DEADLINES,
            SILENT,
            VM_HOLDERS,
            version,
            nodeId,
            ...held,
          ),
        );
        if (removed) return result;
        continue;
      }
      if (!next) return result;
      const deadline = earliestHoldDeadline(next);
      // Exact: the script writes only if the key is still at the version `state` was read at.
      const { gained, lost } = heldVmIdChanges(state, next);
      const written = await this.connection.run(() =>
        this.redis.fleetPut(
          key,
          INDEX,
          VERSIONS,
          HOLD_DEADLINES,
          SILENT,
          VM_HOLDERS,
          INDEXED_WRITES,
          version,
          encodeStoredNode(next),
          next.received_at_ms,
          nodeId,
          keepsVmsWhenSilent(next) ? '' : NODE_KEY_TTL_MS,
          deadline === null ? '' : deadline,
          `${PREFIX}node:`,
          gained.length,
          ...gained,
          ...lost,
        ),
      );
      if (Array.isArray(written)) {
        const owners = new Map<string, string>();
        for (let index = 0; index < written.length; index += 2) {
          owners.set(written[index], written[index + 1]);
        }
        throw new VmIdsHeldElsewhereError(nodeId, owners);
      }
      if (written) return result;
    }
    throw new StoreUnavailableError(
      `node ${nodeId} changed under ${WRITE_ATTEMPTS} concurrent writes in a row; try again`,
    );
  }
}
