import { Logger } from '@nestjs/common';
import type Redis from 'ioredis';
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
/**
 * Hash of VM id → the ids of the nodes holding it (heldVmIds), space-separated (node ids have
 * no space), first holder first (those a making-whole added: in listAll's order): what
 * ownersOf reads instead of every node. Every script that changes what a node holds changes
 * it in the same script, so every controller on this Redis reads the same. An entry can only
 * be left stale (a node key that expired with no sweep, a write by a controller of an earlier
 * version): ownersOf checks each holder against its state. Besides the VM ids, it holds
 * WHOLE_FIELD (and INDEXING_FIELD while being made whole).
 */
const VM_HOLDERS = `${PREFIX}vm-holders`;
/** Counts the writes (PUT) that kept VM_HOLDERS, as VERSIONS counts every write. */
const INDEXED_WRITES = `${PREFIX}vm-holders:writes`;
/**
 * The field of VM_HOLDERS (no VM id has a space, see ID_PATTERN) holding VERSIONS -
 * INDEXED_WRITES as it was when VM_HOLDERS was last made whole from every record. Inside the
 * hash, so it goes with it: a VM_HOLDERS deleted or evicted (or never written: a store the
 * version before the index wrote, upgraded in place) has none, and the first lookup makes it
 * whole from the records (once, in batches) and sets it. While VERSIONS - INDEXED_WRITES still
 * equals it, every write since kept VM_HOLDERS; once it is larger, a controller of an earlier
 * version sharing this Redis wrote without it: until VM_HOLDERS is made whole again (at most
 * every INDEX_INTERVAL_MS), ownersOf reads every node, as that version did, so it never misses
 * an owner.
 */
const WHOLE_FIELD = 'index whole at unindexed writes';
/**
 * The field of VM_HOLDERS naming the making-whole under way: WHOLE_FIELD is set only if it is
 * still there at the end, so a VM_HOLDERS deleted halfway (its first batches gone) is not
 * marked whole.
 */
const INDEXING_FIELD = 'index being made whole by';
const nodeKey = (nodeId: string) => `${PREFIX}node:${nodeId}`;
/**
 * A node key outlives any live node, so keys nobody sweeps (every controller down) vanish;
 * but only those of nodes listing no VM. A node listing VMs is kept with no expiry (the live
 * index filters by receive time): with every controller down past it (an upgrade's restart)
 * its VMs would otherwise vanish, not become a silent node's at the next sweep.
 */
const NODE_KEY_TTL_MS = 2 * NODE_STALE_AFTER_MS;
const SWEEP_BATCH = 5_000;
/**
 * Silent nodes forgotten per script, and the bytes of their values read, after which a script
 * stops: each is decoded in the script (up to 1 MiB), a fleet-wide drop leaves tens of
 * thousands, and Redis serves nothing else while a script runs.
 */
const FORGET_BATCH = 500;
const FORGET_BATCH_BYTES = 8 * 1024 * 1024;
const WRITE_ATTEMPTS = 20;
/** Bytes of holders' states one lookup script reads (and decodes) before it stops. */
const OWNERS_BATCH_BYTES = 4 * 1024 * 1024;
/** (VM id, node id) pairs per script while VM_HOLDERS is made whole. */
const INDEX_BATCH = 2_000;
/** At most one making-whole of VM_HOLDERS this often: each reads every node. */
const INDEX_INTERVAL_MS = 30_000;
/** At most one line this often about unreadable keys: every listing meets them again. */
const UNREADABLE_LOG_INTERVAL_MS = 60_000;

/**
 * Lua for VM_HOLDERS, put before the scripts that change it: add or remove one holder of one
 * VM id, and the VM ids a stored node's value holds (readHeldVmIds: nil when its state is no
 * JSON object; heldVmIds: none then). Keep it the same as heldVmIds in @app/fleet-domain
 * (node-state.ts: listed, kept silent, minted for a hold), which the TypeScript side of the
 * index (heldVmIdChanges, the making whole) reads.
 */
const VM_HOLDER_FUNCTIONS = `
local function addHolder(index, vmId, nodeId)
  local holders = redis.call('HGET', index, vmId)
  if not holders then
    redis.call('HSET', index, vmId, nodeId)
    return
  end
  for holder in string.gmatch(holders, '%S+') do
    if holder == nodeId then return end
  end
  redis.call('HSET', index, vmId, holders .. ' ' .. nodeId)
end
local function removeHolder(index, vmId, nodeId)
  local holders = redis.call('HGET', index, vmId)
  if not holders then return end
  local rest = {}
  for holder in string.gmatch(holders, '%S+') do
    if holder ~= nodeId then rest[#rest + 1] = holder end
  end
  if #rest == 0 then
    redis.call('HDEL', index, vmId)
  else
    redis.call('HSET', index, vmId, table.concat(rest, ' '))
  end
end
local function readHeldVmIds(value)
  local ok, state = pcall(cjson.decode, string.match(value, '^%d+\\n[^\\n]*\\n(.*)$') or '')
  if not ok or type(state) ~= 'table' then return nil end
  local ids = {}
  local function add(vm)
    if type(vm) == 'table' and type(vm.vm_id) == 'string' then ids[#ids + 1] = vm.vm_id end
  end
  if type(state.vms) == 'table' then
    for _, vm in ipairs(state.vms) do add(vm) end
  end
  if type(state.silent_vms) == 'table' then
    for _, silent in ipairs(state.silent_vms) do
      if type(silent) == 'table' then add(silent.vm) end
    end
  end
  if type(state.holds) == 'table' then
    for _, hold in pairs(state.holds) do add(hold) end
  end
  return ids
end
local function heldVmIds(value)
  return readHeldVmIds(value) or {}
end
`;

/**
 * Each node is stored as "<version>\n<record json>\n<state json>" (stored-node.ts reads and
 * writes it): listings read only the record part, everything else the state. A write names
 * the version it read and succeeds only if the record is still at it (compare-and-set in one script), so every change
 * is decided by the caller exactly as in memory, and applied atomically or not at all. A node
 * kept silent for its VMs stays so (no expiry, out of the live index) unless the write carries
 * another receive time than the one it was kept with: a heartbeat. The VM ids the node comes
 * to hold (ARGV[8] of them, from ARGV[9]) and those it no longer holds (the rest), reckoned
 * from the state read at the version named, change VM_HOLDERS in the same script. A VM id it
 * comes to hold that another node's stored state holds (named by VM_HOLDERS, checked against
 * that state as OWNERS_OF does; node keys under ARGV[7]) is claimed already: nothing is
 * written, and the script answers those (VM id, node id) pairs instead of the new version.
 */
const PUT = `${VM_HOLDER_FUNCTIONS}
local current = redis.call('GET', KEYS[1])
local version = current and string.match(current, '^(%d+)\\n') or ''
if version ~= ARGV[1] then return 0 end
local gained = tonumber(ARGV[8])
local taken, held = {}, {}
for i = 9, 8 + gained do
  local vmId = ARGV[i]
  for holder in string.gmatch(redis.call('HGET', KEYS[6], vmId) or '', '%S+') do
    if holder ~= ARGV[4] then
      if held[holder] == nil then
        local value = redis.call('GET', ARGV[7] .. holder)
        local set = {}
        for _, id in ipairs(value and heldVmIds(value) or {}) do set[id] = true end
        held[holder] = set
      end
      if held[holder][vmId] then
        taken[#taken + 1] = vmId
        taken[#taken + 1] = holder
        break
      end
    end
  end
end
if #taken > 0 then return taken end
local next = redis.call('INCR', KEYS[3])
redis.call('INCR', KEYS[7])
for i = 9, 8 + gained do addHolder(KEYS[6], ARGV[i], ARGV[4]) end
for i = 9 + gained, #ARGV do removeHolder(KEYS[6], ARGV[i], ARGV[4]) end
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

/**
 * Forgets a node altogether, if its key is still at version ARGV[1], and that it holds the VM
 * ids from ARGV[3].
 */
const REMOVE = `${VM_HOLDER_FUNCTIONS}
local current = redis.call('GET', KEYS[1])
local version = current and string.match(current, '^(%d+)\\n') or ''
if version ~= ARGV[1] then return 0 end
for i = 3, #ARGV do removeHolder(KEYS[5], ARGV[i], ARGV[2]) end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[2])
redis.call('ZREM', KEYS[4], ARGV[2])
return 1`;

/**
 * Every node stored, live or silent, in one consistent snapshot, after the counts of writes
 * (VERSIONS) and of those that kept VM_HOLDERS (INDEXED_WRITES) as of it.
 */
const LIST_ALL = `
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do ids[#ids + 1] = id end
local found = { redis.call('GET', KEYS[3]) or '0', redis.call('GET', KEYS[4]) or '0' }
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
 * the only place that key is followed by an object); the others are removed, with the VM ids
 * their holds were minted (they list no VM) out of VM_HOLDERS.
 */
const DROP_STALE = `${VM_HOLDER_FUNCTIONS}
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
  if not kept then
    if value and string.find(value, '"vm_id"', 1, true) then
      for _, vmId in ipairs(heldVmIds(value)) do removeHolder(KEYS[4], vmId, id) end
    end
    redis.call('DEL', key)
  end
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
end
return dropped`;

/**
 * Forgets nodes kept silent beyond the newest ARGV[1] (oldest first), and the VM ids they hold:
 * at most ARGV[3] of them, and no more once ARGV[4] bytes of their values were read (each is
 * decoded here, up to 1 MiB), so no call holds Redis for long. Returns 1 if more are beyond
 * the newest ARGV[1] (0 if not), then the values forgotten.
 */
const FORGET_SILENT = `${VM_HOLDER_FUNCTIONS}
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[1])
if excess <= 0 then return { 0 } end
local count = math.min(excess, tonumber(ARGV[3]))
local forgotten, bytes, done = { 0 }, 0, 0
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, count - 1)) do
  if bytes >= tonumber(ARGV[4]) then break end
  local key = ARGV[2] .. id
  local value = redis.call('GET', key)
  if value then
    forgotten[#forgotten + 1] = value
    bytes = bytes + #value
    for _, vmId in ipairs(heldVmIds(value)) do removeHolder(KEYS[2], vmId, id) end
  end
  redis.call('DEL', key)
  redis.call('ZREM', KEYS[1], id)
  done = done + 1
end
if done < excess then forgotten[1] = 1 end
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

/**
 * Of the VM ids from ARGV[4], each with the first holder VM_HOLDERS names but node ARGV[2]
 * whose stored state holds it (read here, each holder once). A holder whose state does not
 * hold it (its key gone, or written since by a controller of an earlier version) is a stale
 * entry, taken out in the same script, so nothing writes between the check and the removal; one
 * whose state cannot be read is neither (listAll leaves it out too). Stops once ARGV[3] bytes
 * of states were read, so no call holds Redis for long. Returns how many of the VM ids it went
 * through, then (VM id, node id) pairs; nil while VM_HOLDERS may miss a write (see
 * WHOLE_FIELD).
 */
const OWNERS_OF = `${VM_HOLDER_FUNCTIONS}
local unindexed = redis.call('HGET', KEYS[1], '${WHOLE_FIELD}')
if not unindexed then return false end
local writes = tonumber(redis.call('GET', KEYS[2]) or '0') - tonumber(redis.call('GET', KEYS[3]) or '0')
if writes ~= tonumber(unindexed) then return false end
local held, found, bytes, done = {}, { 0 }, 0, 0
for i = 4, #ARGV do
  if bytes >= tonumber(ARGV[3]) then break end
  local vmId = ARGV[i]
  local holders = redis.call('HGET', KEYS[1], vmId)
  for holder in string.gmatch(holders or '', '%S+') do
    if holder ~= ARGV[2] then
      if held[holder] == nil then
        local value = redis.call('GET', ARGV[1] .. holder)
        local ids = {}
        if value then
          bytes = bytes + #value
          ids = readHeldVmIds(value)
        end
        local set = false
        if ids then
          set = {}
          for _, id in ipairs(ids) do set[id] = true end
        end
        held[holder] = set
      end
      local set = held[holder]
      if set and set[vmId] then
        found[#found + 1] = vmId
        found[#found + 1] = holder
        break
      end
      if set then removeHolder(KEYS[1], vmId, holder) end
    end
  end
  done = done + 1
end
found[1] = done
return found`;

/**
 * Adds the (VM id, node id) pairs from ARGV[4] to VM_HOLDERS, one batch of making it whole,
 * the one named ARGV[1]: the first batch (ARGV[2] = 'first') names it in INDEXING_FIELD, the
 * others go on only while it is still named there (-1 when not: VM_HOLDERS was deleted, or
 * another controller began again). With ARGV[3], the last batch: WHOLE_FIELD is set to ARGV[3]
 * (as counted with the records read) if no write left VM_HOLDERS out since; 0 when one did.
 */
const ADD_VM_HOLDERS = `${VM_HOLDER_FUNCTIONS}
if ARGV[2] == 'first' then
  redis.call('HSET', KEYS[1], '${INDEXING_FIELD}', ARGV[1])
elseif redis.call('HGET', KEYS[1], '${INDEXING_FIELD}') ~= ARGV[1] then
  return -1
end
for i = 4, #ARGV, 2 do addHolder(KEYS[1], ARGV[i], ARGV[i + 1]) end
if ARGV[3] == '' then return 1 end
redis.call('HDEL', KEYS[1], '${INDEXING_FIELD}')
local writes = tonumber(redis.call('GET', KEYS[2]) or '0') - tonumber(redis.call('GET', KEYS[3]) or '0')
if writes ~= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], '${WHOLE_FIELD}', ARGV[3])
return 1`;

type FleetRedis = Redis & {
  fleetPut(...args: Array<string | number>): Promise<number | string[]>;
  fleetListLive(...args: Array<string | number>): Promise<string[]>;
  fleetFindLive(...args: Array<string | number>): Promise<string | null>;
  fleetDropStale(...args: Array<string | number>): Promise<string[]>;
  fleetRemove(...args: Array<string | number>): Promise<number>;
  fleetListAll(...args: Array<string | number>): Promise<string[]>;
  fleetForgetSilent(...args: Array<string | number>): Promise<[number, ...string[]]>;
  fleetHoldsDue(...args: Array<string | number>): Promise<string[]>;
  fleetOwnersOf(...args: Array<string | number>): Promise<[number, ...string[]] | null>;
  fleetAddVmHolders(...args: Array<string | number>): Promise<number>;
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
