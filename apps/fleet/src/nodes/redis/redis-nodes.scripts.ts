/** The Lua scripts RedisNodesRepository runs: each reads and writes the fleet state in one step. */
import type Redis from 'ioredis';
import { INDEXING_FIELD, WHOLE_FIELD } from './redis-nodes.keys';

/**
 * Lua for VM_HOLDERS, put before the scripts that change it: add or remove one holder of one
 * VM id, and the VM ids a stored node's value holds (readHeldVmIds: nil when its state is no
 * JSON object; heldVmIds: none then). Keep it the same as heldVmIds in @app/fleet-domain
 * (node-vm-listing.ts: listed, kept silent, minted for a hold), which the TypeScript side of the
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
export const PUT = `${VM_HOLDER_FUNCTIONS}
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
export const REMOVE = `${VM_HOLDER_FUNCTIONS}
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
export const LIST_ALL = `
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
export const LIST_LIVE = `
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

export const FIND_LIVE = `
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
export const DROP_STALE = `${VM_HOLDER_FUNCTIONS}
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
export const FORGET_SILENT = `${VM_HOLDER_FUNCTIONS}
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
export const HOLDS_DUE = `
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
export const OWNERS_OF = `${VM_HOLDER_FUNCTIONS}
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
export const ADD_VM_HOLDERS = `${VM_HOLDER_FUNCTIONS}
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

export type FleetRedis = Redis & {
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
