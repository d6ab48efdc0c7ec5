import {
  DISPATCH_FAILURES_KEPT,
  DISPATCH_REASON_MAX_LENGTH,
  DispatchFailures,
  HeartbeatDiskRoom,
  HeartbeatReplica,
  HeartbeatVm,
  HostPort,
  NodeCredential,
  NodeRecord,
  NodeState,
  HeldForTenant,
  RamHold,
  SilentVm,
  toNodeRecord,
} from '@app/fleet-domain';

/**
 * How a node is kept in Redis, read and written only here: "<version>\n<record json>\n<state
 * json>" (JSON never holds a raw newline). Listings read only the record part; everything else
 * the state. What is read is normalised once, here: a state an older controller stored (one
 * sharing the same Redis during an upgrade) comes out in today's shape, so the rules never
 * meet an old one.
 */

/** A node's key as read: the version a write must name, and the state (none: no such node). */
export interface StoredNode {
  version: string;
  state?: NodeState;
}

/** Thrown for a value that is no node state at all (written by something else). */
export class UnreadableStoredNodeError extends Error {}

/** The value of a node's key without its version (the write script puts the version first). */
export function encodeStoredNode(state: NodeState): string {
  return `${JSON.stringify(state.record)}\n${JSON.stringify(state)}`;
}

/** A node's key as read (null: no such key). */
export function decodeStoredNode(stored: string | null): StoredNode {
  if (stored === null) return { version: '' };
  const versionEnd = stored.indexOf('\n');
  const recordEnd = stored.indexOf('\n', versionEnd + 1);
  if (versionEnd === -1 || recordEnd === -1) {
    throw new UnreadableStoredNodeError('a stored node is not "<version>\\n<record>\\n<state>"');
  }
  return {
    version: stored.slice(0, versionEnd),
    state: normaliseStoredState(parseJson(stored.slice(recordEnd + 1))),
  };
}

/** A node's state, decoded from a whole key (as listings of states return them). */
export function decodeStoredState(stored: string): NodeState {
  return decodeStoredNode(stored).state!;
}

/** The record part of a node's key (as listings of records return them). */
export function decodeStoredRecord(json: string): NodeRecord {
  const record = parseJson(json);
  if (!isStoredRecord(record)) {
    throw new UnreadableStoredNodeError(
      'a stored node record lacks a field or has one of another type',
    );
  }
  return record;
}

/**
 * A stored state in today's shape. Older controllers stored no `beat_gaps_ms` (the beat
 * interval is then unknown until the next heartbeats) and holds without a deadline or spawn
 * key: such a hold is over as of the heartbeat it was stored with, as those controllers ended
 * it at the next one. Nor did they keep the credential a heartbeat was taken with: such a node
 * is called by a controller with tokens only once its next heartbeat records one.
 */
export function normaliseStoredState(value: unknown): NodeState {
  if (!isStoredState(value)) {
    throw new UnreadableStoredNodeError(
      'a stored node state lacks a field or has one of another type',
    );
  }
  const stored = value;
  if (!stored.vms.every(isStoredVm)) {
    throw new UnreadableStoredNodeError('a stored node lists a VM that is not one');
  }
  const holds: Record<string, RamHold> = {};
  if (stored.holds !== undefined) {
    if (!isObject(stored.holds)) {
      throw new UnreadableStoredNodeError("a stored node's holds are not an object");
    }
    for (const [holdId, hold] of Object.entries(stored.holds)) {
      // Hold ids are UUIDs; this one would set the prototype of `holds` instead of a hold.
      if (holdId === '__proto__' || !isStoredHold(hold)) {
        throw new UnreadableStoredNodeError('a stored node holds RAM under a hold that is not one');
      }
      holds[holdId] = normaliseHold(hold, stored.received_at_ms);
    }
  }
  const facts = {
    node_id: stored.node_id,
    hostname: stored.hostname,
    wg_ip: stored.wg_ip,
    spawn_port: stored.spawn_port,
    ram_total_mb: stored.ram_total_mb,
    ram_used_mb: stored.ram_used_mb,
    kvm_available: stored.kvm_available,
    reserved: stored.reserved,
    vms: stored.vms,
    boot_id: stored.boot_id,
    timestamp_utc: stored.timestamp_utc,
    received_at_ms: stored.received_at_ms,
    // Older controllers kept one receive time, on Redis TIME: the wall clock too.
    received_at_wall_ms: isNumber(stored.received_at_wall_ms)
      ? stored.received_at_wall_ms
      : stored.received_at_ms,
    beat_gaps_ms: isArrayOf(stored.beat_gaps_ms, isNumber) ? stored.beat_gaps_ms : [],
    holds,
    dispatch_failures: normaliseDispatchFailures(stored.dispatch_failures),
    credential: isCredential(stored.credential) ? stored.credential : null,
    silent_vms: normaliseSilentVms(stored.silent_vms),
    disk_room: isStoredDiskRoom(stored.disk_room) ? stored.disk_room : null,
    replicas: isArrayOf(stored.replicas, isStoredReplica) ? stored.replicas : [],
    // Older controllers kept none: none until the node's next heartbeat.
    fenced_vm_ids: isArrayOf(stored.fenced_vm_ids, isString) ? stored.fenced_vm_ids : [],
  };
  return { ...facts, record: isStoredRecord(stored.record) ? stored.record : toNodeRecord(facts) };
}

/**
 * A state as any controller may have stored it: today's, less what older ones lacked; the
 * parts checked one by one (VMs, holds) and those taken only in today's shape still unknown.
 */
type StoredState = Omit<
  NodeState,
  | 'beat_gaps_ms'
  | 'holds'
  | 'vms'
  | 'record'
  | 'dispatch_failures'
  | 'received_at_wall_ms'
  | 'credential'
  | 'silent_vms'
  | 'disk_room'
  | 'replicas'
  | 'fenced_vm_ids'
> & {
  disk_room?: unknown;
  replicas?: unknown;
  fenced_vm_ids?: unknown;
  credential?: unknown;
  silent_vms?: unknown;
  vms: unknown[];
  received_at_wall_ms?: unknown;
  dispatch_failures?: unknown;
  beat_gaps_ms?: unknown;
  holds?: unknown;
  record?: unknown;
};

type StoredHold = Pick<RamHold, 'ram_mb' | 'vm_id'> &
  Partial<Omit<RamHold, 'tenant'>> & { tenant?: unknown };

/**
 * Every field today's rules read from a state, of its type: a value of another type would
 * throw a TypeError deep inside a rule, failing every listing and create that meets it.
 */
function isStoredState(value: unknown): value is StoredState {
  return (
    isObject(value) &&
    typeof value.node_id === 'string' &&
    typeof value.hostname === 'string' &&
    typeof value.wg_ip === 'string' &&
    isNumber(value.spawn_port) &&
    isNumber(value.ram_total_mb) &&
    isNumber(value.ram_used_mb) &&
    typeof value.kvm_available === 'boolean' &&
    typeof value.reserved === 'boolean' &&
    typeof value.boot_id === 'string' &&
    typeof value.timestamp_utc === 'string' &&
    isNumber(value.received_at_ms) &&
    Array.isArray(value.vms)
  );
}

/** A VM as heartbeats report it (tenant_id and the key absent in older states). */
function isStoredVm(value: unknown): value is HeartbeatVm {
  return (
    isObject(value) &&
    typeof value.vm_id === 'string' &&
    typeof value.vm_type === 'string' &&
    typeof value.state === 'string' &&
    isNumber(value.ram_alloc_mb) &&
    isNumber(value.vcpu_count) &&
    isOptional(value.started_at, isStringOrNull) &&
    isOptional(value.tenant_id, isStringOrNull) &&
    isOptional(value.idempotency_key, isString) &&
    isOptional(value.accel, (accel) => accel === null || accel === 'kvm' || accel === 'tcg') &&
    isOptional(value.host_ports, (ports) => isArrayOf(ports, isHostPort))
  );
}

function isHostPort(value: unknown): value is HostPort {
  return (
    isObject(value) &&
    isNumber(value.host_port) &&
    isNumber(value.guest_port) &&
    typeof value.protocol === 'string'
  );
}

/** Older controllers kept no disk room: then none, as from an agent that sends none. */
function isStoredDiskRoom(value: unknown): value is HeartbeatDiskRoom {
  return (
    isObject(value) &&
    isNumber(value.room_mb) &&
    isNumber(value.committed_mb) &&
    isNumber(value.committable_mb) &&
    isNumber(value.reserve_mb) &&
    isNumber(value.overcommit)
  );
}

function isStoredReplica(value: unknown): value is HeartbeatReplica {
  return (
    isObject(value) &&
    typeof value.vm_id === 'string' &&
    typeof value.source_node_id === 'string' &&
    typeof value.copied_at === 'string' &&
    isNumber(value.size_bytes)
  );
}

/** A hold as any controller stored it: older ones kept no deadline or key. */
function isStoredHold(value: unknown): value is StoredHold {
  return (
    isObject(value) &&
    isNumber(value.ram_mb) &&
    isOptional(value.vm_id, isString) &&
    isOptional(value.expires_at_ms, isNumber) &&
    isOptional(value.spawn_key, isString)
  );
}

/** A hold's tenant as a controller with tenants stored it; anything else counts as none. */
function isHeldForTenant(value: unknown): value is HeldForTenant {
  return (
    isObject(value) &&
    typeof value.tenant_id === 'string' &&
    isNumber(value.vcpu_count) &&
    isOptional(value.disk_gb, isNumber)
  );
}

/** A record as listings show it; other fields (added later) pass as they are. */
function isStoredRecord(value: unknown): value is NodeRecord {
  return (
    isObject(value) &&
    typeof value.node_id === 'string' &&
    typeof value.hostname === 'string' &&
    typeof value.wg_ip === 'string' &&
    isNumber(value.ram_available_mb) &&
    isNumber(value.vm_count) &&
    typeof value.kvm_available === 'boolean' &&
    typeof value.reserved === 'boolean' &&
    typeof value.last_heartbeat === 'string'
  );
}

function normaliseHold(hold: StoredHold, receivedAtMs: number): RamHold {
  const normalised: RamHold = {
    ram_mb: hold.ram_mb,
    expires_at_ms: typeof hold.expires_at_ms === 'number' ? hold.expires_at_ms : receivedAtMs,
    // No key: no spawn is found by it (and the hold is over anyway).
    spawn_key: typeof hold.spawn_key === 'string' ? hold.spawn_key : '',
  };
  if (hold.vm_id !== undefined) normalised.vm_id = hold.vm_id;
  if (isHeldForTenant(hold.tenant)) normalised.tenant = hold.tenant;
  return normalised;
}

/** Older controllers kept no dispatch failures; anything but today's shape counts as none. */
function normaliseDispatchFailures(value: unknown): DispatchFailures | null {
  if (
    !isObject(value) ||
    !isArrayOf(value.at_ms, isNumber) ||
    !isNumber(value.in_a_row) ||
    typeof value.reason !== 'string'
  ) {
    return null;
  }
  // Bounded as withDispatchFailure bounds them: a stored value is never trusted to be small.
  return {
    at_ms: value.at_ms.slice(-DISPATCH_FAILURES_KEPT),
    in_a_row: value.in_a_row,
    reason: value.reason.slice(0, DISPATCH_REASON_MAX_LENGTH),
  };
}

/** Older controllers kept no SilentVms (their nodes' VMs went with the next heartbeat). */
function normaliseSilentVms(value: unknown): SilentVm[] {
  if (value === undefined) return [];
  if (!isArrayOf(value, isSilentVm)) {
    throw new UnreadableStoredNodeError("a stored node's silent VMs are not VMs");
  }
  return value;
}

function isSilentVm(value: unknown): value is SilentVm {
  return (
    isObject(value) &&
    isStoredVm(value.vm) &&
    isNumber(value.silent_since_wall_ms) &&
    isObject(value.speaker) &&
    typeof value.speaker.boot_id === 'string' &&
    typeof value.speaker.wg_ip === 'string' &&
    typeof value.speaker.hostname === 'string'
  );
}

const CREDENTIALS: ReadonlySet<unknown> = new Set<NodeCredential>([
  'own',
  'previous-secret',
  'shared',
]);

function isCredential(value: unknown): value is NodeCredential {
  return CREDENTIALS.has(value);
}

function parseJson(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    throw new UnreadableStoredNodeError('a stored node is not JSON');
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNumber(value: unknown): value is number {
  return typeof value === 'number';
}

function isString(value: unknown): value is string {
  return typeof value === 'string';
}

function isStringOrNull(value: unknown): value is string | null {
  return value === null || typeof value === 'string';
}

function isOptional(value: unknown, is: (value: unknown) => boolean): boolean {
  return value === undefined || is(value);
}

function isArrayOf<T>(value: unknown, is: (item: unknown) => item is T): value is T[] {
  return Array.isArray(value) && value.every(is);
}
