import { Logger } from '@nestjs/common';
import type Redis from 'ioredis';
import {
  NODE_STALE_AFTER_MS,
  NodeChange,
  NodeRecord,
  NodeState,
  earliestHoldDeadline,
} from '@app/fleet-domain';
import { StoreUnavailableError } from '../store-unavailable.error';
import { RedisConnection } from './redis-connection';
import {
  UnreadableStoredNodeError,
  decodeStoredNode,
  decodeStoredRecord,
  decodeStoredState,
  encodeStoredNode,
} from './stored-node';
import { NodesRepository } from '../nodes.repository';

const PREFIX = 'ppn-fleet:';
/** Sorted set of node ids by receive time: what is live, and what the sweep drops. */
const INDEX = `${PREFIX}nodes`;
/** One counter for every write: a record's version, so no change is ever applied twice. */
const VERSIONS = `${PREFIX}version`;
/** Sorted set of the ids of nodes holding RAM, by their earliest hold deadline: what the sweep ends. */
const HOLD_DEADLINES = `${PREFIX}hold-deadlines`;
const nodeKey = (nodeId: string) => `${PREFIX}node:${nodeId}`;
/** A node key outlives any live node, so keys nobody sweeps (every controller down) vanish. */
const NODE_KEY_TTL_MS = 2 * NODE_STALE_AFTER_MS;
const SWEEP_BATCH = 5_000;
const WRITE_ATTEMPTS = 20;
/** At most one line this often about unreadable keys: every listing meets them again. */
const UNREADABLE_LOG_INTERVAL_MS = 60_000;

/**
 * Each node is stored as "<version>\n<record json>\n<state json>" (stored-node.ts reads and
 * writes it): listings read only the record part, everything else the state. A write names
 * the version it read and succeeds only if the record is still at it (compare-and-set in one script), so every change
 * is decided by the caller exactly as in memory, and applied atomically or not at all.
 */
const PUT = `
local current = redis.call('GET', KEYS[1])
local version = current and string.match(current, '^(%d+)\\n') or ''
if version ~= ARGV[1] then return 0 end
local next = redis.call('INCR', KEYS[3])
redis.call('SET', KEYS[1], next .. '\\n' .. ARGV[2], 'PX', ARGV[5])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
if ARGV[6] == '' then
  redis.call('ZREM', KEYS[4], ARGV[4])
else
  redis.call('ZADD', KEYS[4], ARGV[6], ARGV[4])
end
return next`;

/**
 * Every node heard from since ARGV[1], in one consistent snapshot; with ARGV[3] = 'records',
 * only the record part of each.
 */
const LIST_LIVE = `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], '+inf')
local found = {}
for first = 1, #ids, 500 do
  local keys = {}
  for i = first, math.min(first + 499, #ids) do keys[#keys + 1] = ARGV[2] .. ids[i] end
  local values = redis.call('MGET', unpack(keys))
  for i = 1, #keys do
    local value = values[i]
    if value then
      if ARGV[3] == 'records' then value = string.match(value, '^%d+\\n([^\\n]*)\\n') end
      found[#found + 1] = value
    end
  end
end
return found`;

const FIND_LIVE = `
local score = redis.call('ZSCORE', KEYS[2], ARGV[2])
if not score or tonumber(score) < tonumber(ARGV[1]) then return false end
return redis.call('GET', KEYS[1])`;

/** Removes up to ARGV[3] records heard from before ARGV[1]; returns them. */
const DROP_STALE = `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'LIMIT', 0, ARGV[3])
local dropped = {}
for i = 1, #ids do
  local key = ARGV[2] .. ids[i]
  local value = redis.call('GET', key)
  if value then dropped[#dropped + 1] = value end
  redis.call('DEL', key)
  redis.call('ZREM', KEYS[1], ids[i])
  redis.call('ZREM', KEYS[2], ids[i])
end
return dropped`;

/**
 * Up to ARGV[3] ids of nodes with a hold due at ARGV[1]; entries whose node is gone (its key
 * expired with no sweep to drop it) are removed instead.
 */
const HOLDS_DUE = `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
local due = {}
for i = 1, #ids do
  if redis.call('EXISTS', ARGV[2] .. ids[i]) == 1 then
    due[#due + 1] = ids[i]
  else
    redis.call('ZREM', KEYS[1], ids[i])
  end
end
return due`;

type FleetRedis = Redis & {
  fleetPut(...args: Array<string | number>): Promise<number>;
  fleetListLive(...args: Array<string | number>): Promise<string[]>;
  fleetFindLive(...args: Array<string | number>): Promise<string | null>;
  fleetDropStale(...args: Array<string | number>): Promise<string[]>;
  fleetHoldsDue(...args: Array<string | number>): Promise<string[]>;
};

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

  constructor(private readonly connection: RedisConnection) {
    super();
    const client = connection.client;
    client.defineCommand('fleetPut', { numberOfKeys: 4, lua: PUT });
    client.defineCommand('fleetListLive', { numberOfKeys: 1, lua: LIST_LIVE });
    client.defineCommand('fleetFindLive', { numberOfKeys: 2, lua: FIND_LIVE });
    client.defineCommand('fleetDropStale', { numberOfKeys: 2, lua: DROP_STALE });
    client.defineCommand('fleetHoldsDue', { numberOfKeys: 1, lua: HOLDS_DUE });
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
      const { next, result } = decide(state);
      if (!next) return result;
      const deadline = earliestHoldDeadline(next);
      const written = await this.connection.run(() =>
        this.redis.fleetPut(
          key,
          INDEX,
          VERSIONS,
          HOLD_DEADLINES,
          version,
          encodeStoredNode(next),
          next.received_at_ms,
          nodeId,
          NODE_KEY_TTL_MS,
          deadline === null ? '' : deadline,
        ),
      );
      if (written) return result;
    }
    throw new StoreUnavailableError(
      `node ${nodeId} changed under ${WRITE_ATTEMPTS} concurrent writes in a row; try again`,
    );
  }
}
