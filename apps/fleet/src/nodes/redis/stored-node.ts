import {
  DispatchFailures,
  HeartbeatVm,
  NodeRecord,
  NodeState,
  RamHold,
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
  if (!isObject(record) || typeof record.node_id !== 'string') {
    throw new UnreadableStoredNodeError('a stored node record has no node_id');
  }
  return record as unknown as NodeRecord;
}

/**
 * A stored state in today's shape. Older controllers stored no `beat_gaps_ms` (the beat
 * interval is then unknown until the next heartbeats) and holds without a deadline or spawn
 * key: such a hold is over as of the heartbeat it was stored with, as those controllers ended
 * it at the next one.
 */
export function normaliseStoredState(value: unknown): NodeState {
  if (
    !isObject(value) ||
    typeof value.node_id !== 'string' ||
    typeof value.received_at_ms !== 'number' ||
    !Array.isArray(value.vms)
  ) {
    throw new UnreadableStoredNodeError('a stored node state lacks node_id, received_at_ms or vms');
  }
  const stored = value as unknown as StoredState;
  const holds: Record<string, RamHold> = {};
  for (const [holdId, hold] of Object.entries(stored.holds ?? {})) {
    holds[holdId] = normaliseHold(hold, stored.received_at_ms);
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
    beat_gaps_ms: Array.isArray(stored.beat_gaps_ms) ? stored.beat_gaps_ms : [],
    holds,
    dispatch_failures: normaliseDispatchFailures(stored.dispatch_failures),
  };
  return { ...facts, record: isObject(stored.record) ? stored.record : toNodeRecord(facts) };
}

/** A state as any controller may have stored it: today's, less what older ones lacked. */
type StoredState = Omit<
  NodeState,
  'beat_gaps_ms' | 'holds' | 'vms' | 'record' | 'dispatch_failures'
> & {
  vms: HeartbeatVm[];
  dispatch_failures?: unknown;
  beat_gaps_ms?: number[];
  holds?: Record<string, StoredHold>;
  record?: NodeRecord;
};

type StoredHold = Pick<RamHold, 'ram_mb' | 'vm_id'> & Partial<RamHold>;

function normaliseHold(hold: StoredHold, receivedAtMs: number): RamHold {
  const normalised: RamHold = {
    ram_mb: hold.ram_mb,
    expires_at_ms: typeof hold.expires_at_ms === 'number' ? hold.expires_at_ms : receivedAtMs,
    // No key: no spawn is found by it (and the hold is over anyway).
    spawn_key: typeof hold.spawn_key === 'string' ? hold.spawn_key : '',
  };
  if (hold.vm_id !== undefined) normalised.vm_id = hold.vm_id;
  return normalised;
}

/** Older controllers kept no dispatch failures; anything but today's shape counts as none. */
function normaliseDispatchFailures(value: unknown): DispatchFailures | null {
  if (
    !isObject(value) ||
    !Array.isArray(value.at_ms) ||
    !value.at_ms.every((at) => typeof at === 'number') ||
    typeof value.in_a_row !== 'number' ||
    typeof value.reason !== 'string'
  ) {
    return null;
  }
  return { at_ms: value.at_ms, in_a_row: value.in_a_row, reason: value.reason };
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
