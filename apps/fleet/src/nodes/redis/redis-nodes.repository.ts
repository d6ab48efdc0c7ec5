import { Logger } from '@nestjs/common';
import type Redis from 'ioredis';
import {
  NODE_STALE_AFTER_MS,
  NodeChange,
  NodeRecord,
  NodeState,
  earliestHoldDeadline,
  keepsVmsWhenSilent,
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
/**
 * Sorted set of the ids of nodes dropped out while listing VMs, by their last receive time:
 * their keys are kept, with no expiry, for those VMs (see keepsVmsWhenSilent).
 */
const SILENT = `${PREFIX}silent-nodes`;
const nodeKey = (nodeId: string) => `${PREFIX}node:${nodeId}`;
/**
 * A node key outlives any live node, so keys nobody sweeps (every controller down) vanish;
 * but only those of nodes listing no VM. A node listing VMs is kept with no expiry (the live
 * index filters by receive time): with every controller down past it (an upgrade's restart)
 * its VMs would otherwise vanish, not become a silent node's at the next sweep.
 */
const NODE_KEY_TTL_MS = 2 * NODE_STALE_AFTER_MS;
const SWEEP_BATCH = 5_000;
const WRITE_ATTEMPTS = 20;
/** At most one line this often about unreadable keys: every listing meets them again. */
const UNREADABLE_LOG_INTERVAL_MS = 60_000;

/**
 * Each node is stored as "<version>\n<record json>\n<state json>" (stored-node.ts reads and
 * writes it): listings read only the record part, everything else the state. A write names
 * the version it read and succeeds only if the record is still at it (compare-and-set in one script), so every change
 * is decided by the caller exactly as in memory, and applied atomically or not at all. A node
 * kept silent for its VMs stays so (no expiry, out of the live index) unless the write carries
 * another receive time than the one it was kept with: a heartbeat.
 */
const PUT = `
local current = redis.call('GET', KEYS[1])
local version = current and string.match(current, '^(%d+)\\n') or ''
if version ~= ARGV[1] then return 0 end
local next = redis.call('INCR', KEYS[3])
local silentAt = redis.call('ZSCORE', KEYS[5], ARGV[4])
if silentAt then
  if tonumber(silentAt) == tonumber(ARGV[3]) then
    redis.call('SET', KEYS[1], next .. '\\n' .. ARGV[2])
    return next
  end
  redis.call('ZREM', KEYS[5], ARGV[4])
end
if ARGV[5] == '' then
  redis.call('SET', KEYS[1], next .. '\\n' .. ARGV[2])
else
  redis.call('SET', KEYS[1], next .. '\\n' .. ARGV[2], 'PX', ARGV[5])
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
if ARGV[6] == '' then
  redis.call('ZREM', KEYS[4], ARGV[4])
else
  redis.call('ZADD', KEYS[4], ARGV[6], ARGV[4])
end
return next`;

/** Forgets a node altogether, if its key is still at version ARGV[1]. */
const REMOVE = `
local current = redis.call('GET', KEYS[1])
local version = current and string.match(current, '^(%d+)\\n') or ''
if version ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[2])
redis.call('ZREM', KEYS[4], ARGV[2])
return 1`;

/** Every node stored, live or silent, in one consistent snapshot. */
const LIST_ALL = `
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do ids[#ids + 1] = id end
local found = {}
for first = 1, #ids, 500 do
  local keys = {}
  for i = first, math.min(first + 499, #ids) do keys[#keys + 1] = ARGV[1] .. ids[i] end
  local values = redis.call('MGET', unpack(keys))
  for i = 1, #keys do
    if values[i] then found[#found + 1] = values[i] end
  end
end
return found`;

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

/**
 * Drops up to ARGV[3] nodes heard from before ARGV[1] out of the live index, and returns them.
 * One whose record counts VMs, or whose state keeps SilentVms, is kept, with no expiry, in the
 * silent set (keepsVmsWhenSilent: vm_count is the number of its VMs; a non-empty silent_vms is
 * the only place that key is followed by an object); the others are removed.
 */
const DROP_STALE = `
local stale = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'WITHSCORES', 'LIMIT', 0, ARGV[3])
local dropped = {}
for i = 1, #stale, 2 do
  local id = stale[i]
  local key = ARGV[2] .. id
  local value = redis.call('GET', key)
  local kept = false
  if value then
    dropped[#dropped + 1] = value
    local ok, record = pcall(cjson.decode, string.match(value, '^%d+\\n([^\\n]*)\\n') or '')
    if (ok and type(record) == 'table' and type(record.vm_count) == 'number' and record.vm_count > 0)
      or string.find(value, '"silent_vms":[{', 1, true) then
      kept = true
      redis.call('PERSIST', key)
      redis.call('ZADD', KEYS[3], stale[i + 1], id)
    end
  end
  if not kept then redis.call('DEL', key) end
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
end
return dropped`;

/** Forgets the nodes kept silent beyond the newest ARGV[1] (oldest first), and returns them. */
const FORGET_SILENT = `
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[1])
if excess <= 0 then return {} end
local forgotten = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, excess - 1)) do
  local key = ARGV[2] .. id
  local value = redis.call('GET', key)
  if value then forgotten[#forgotten + 1] = value end
  redis.call('DEL', key)
  redis.call('ZREM', KEYS[1], id)
end
return forgotten`;

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
  fleetRemove(...args: Array<string | number>): Promise<number>;
  fleetListAll(...args: Array<string | number>): Promise<string[]>;
  fleetForgetSilent(...args: Array<string | number>): Promise<string[]>;
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
    client.defineCommand('fleetPut', { numberOfKeys: 5, lua: PUT });
    client.defineCommand('fleetRemove', { numberOfKeys: 4, lua: REMOVE });
    client.defineCommand('fleetListAll', { numberOfKeys: 2, lua: LIST_ALL });
    client.defineCommand('fleetForgetSilent', { numberOfKeys: 1, lua: FORGET_SILENT });
    client.defineCommand('fleetListLive', { numberOfKeys: 1, lua: LIST_LIVE });
    client.defineCommand('fleetFindLive', { numberOfKeys: 2, lua: FIND_LIVE });
    client.defineCommand('fleetDropStale', { numberOfKeys: 3, lua: DROP_STALE });
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

  async listAll(): Promise<NodeState[]> {
    const stored = await this.connection.run(() =>
      this.redis.fleetListAll(INDEX, SILENT, `${PREFIX}node:`),
    );
    return this.readable(stored, decodeStoredState);
  }

  async forgetSilentBeyond(keep: number): Promise<NodeState[]> {
    const forgotten = await this.connection.run(() =>
      this.redis.fleetForgetSilent(SILENT, keep, `${PREFIX}node:`),
    );
    return this.readable(forgotten, decodeStoredState);
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
        const removed = await this.connection.run(() =>
          this.redis.fleetRemove(key, INDEX, HOLD_DEADLINES, SILENT, version, nodeId),
        );
        if (removed) return result;
        continue;
      }
      if (!next) return result;
      const deadline = earliestHoldDeadline(next);
      const written = await this.connection.run(() =>
        this.redis.fleetPut(
          key,
          INDEX,
          VERSIONS,
          HOLD_DEADLINES,
          SILENT,
          version,
          encodeStoredNode(next),
          next.received_at_ms,
          nodeId,
          keepsVmsWhenSilent(next) ? '' : NODE_KEY_TTL_MS,
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
