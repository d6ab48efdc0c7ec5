import {
  DEFAULT_SPAWN_PORT,
  HEARTBEAT_STAMP_ALLOWANCE_MS,
  NODE_STALE_AFTER_MS,
} from './fleet.constants';
import { rfc3339ToEpochNanos, toRfc3339 } from './rfc3339';
import { NodeHeartbeat } from './wire/node-heartbeat';
import { NodeRecord } from './wire/node-record';
import { VmRecord } from './wire/vm-record';

/**
 * RAM the controller set aside on a node for a VM it placed there since the node's last
 * heartbeat. `vm_id` is set once the agent accepted the VM; until then the hold is in flight.
 */
export interface RamHold {
  ram_mb: number;
  vm_id?: string;
}

/** What the controller stores per node: the last heartbeat it accepted, and its own additions. */
export interface NodeState {
  node_id: string;
  hostname: string;
  wg_ip: string;
  spawn_port: number;
  ram_total_mb: number;
  ram_used_mb: number;
  kvm_available: boolean;
  reserved: boolean;
  vms: VmRecord[];
  boot_id: string;
  timestamp_utc: string;
  /** The controller's receive time (ms since the epoch): the only liveness signal. */
  received_at_ms: number;
  holds: Record<string, RamHold>;
  /** The record every read shows, derived once per change rather than once per read. */
  readonly record: NodeRecord;
}

type NodeFacts = Omit<NodeState, 'record'>;

/**
 * Every NodeState is built by this one literal, so all of them share one object shape: V8
 * then keeps them compact and reads their fields fast (spread-built copies were neither).
 */
function withRecord(facts: NodeFacts): NodeState {
  return {
    node_id: facts.node_id,
    hostname: facts.hostname,
    wg_ip: facts.wg_ip,
    spawn_port: facts.spawn_port,
    ram_total_mb: facts.ram_total_mb,
    ram_used_mb: facts.ram_used_mb,
    kvm_available: facts.kvm_available,
    reserved: facts.reserved,
    vms: facts.vms,
    boot_id: facts.boot_id,
    timestamp_utc: facts.timestamp_utc,
    received_at_ms: facts.received_at_ms,
    holds: facts.holds,
    record: toNodeRecord(facts),
  };
}

export type HeartbeatVerdict =
  /** First heartbeat of an id the controller does not know (or had dropped). */
  | { kind: 'joined' }
  /** The same agent beating again. */
  | { kind: 'refreshed' }
  /** Another boot or another host now speaks for this node id. */
  | { kind: 'taken-over'; previous: Pick<NodeState, 'boot_id' | 'wg_ip' | 'hostname'> }
  /** Older than what is stored for the same boot: a delayed retry, ignored. */
  | { kind: 'out-of-order'; stored_timestamp_utc: string };

/** The oldest receive time that is still live at `nowMs`: silent for 30 s is live, longer is not. */
export function liveSince(nowMs: number): number {
  return nowMs - NODE_STALE_AFTER_MS;
}

/**
 * Decides what a heartbeat means against the record stored for its node id, if any.
 *
 * A heartbeat of the stored boot stamped before the stored one is a delayed retry, ignored.
 * But the stored stamp orders later heartbeats only if it was not ahead of the controller's
 * clock when it arrived (beyond the NTP allowance): otherwise one forged far-future stamp
 * would make the real agent's heartbeats look old until the node dropped. Such a stamp is not
 * refused, it is just not trusted, so the next real heartbeat replaces it.
 */
export function judgeHeartbeat(
  stored: NodeState | undefined,
  heartbeat: NodeHeartbeat,
): HeartbeatVerdict {
  if (!stored) return { kind: 'joined' };
  if (stored.boot_id === heartbeat.boot_id) {
    const storedAt = rfc3339ToEpochNanos(stored.timestamp_utc);
    const sentAt = rfc3339ToEpochNanos(heartbeat.timestamp_utc);
    if (
      storedAt !== null &&
      sentAt !== null &&
      sentAt < storedAt &&
      !wasAheadOnArrival(storedAt, stored.received_at_ms)
    ) {
      return { kind: 'out-of-order', stored_timestamp_utc: stored.timestamp_utc };
    }
  }
  if (
    stored.boot_id !== heartbeat.boot_id ||
    stored.wg_ip !== heartbeat.wg_ip ||
    stored.hostname !== heartbeat.hostname
  ) {
    return {
      kind: 'taken-over',
      previous: { boot_id: stored.boot_id, wg_ip: stored.wg_ip, hostname: stored.hostname },
    };
  }
  return { kind: 'refreshed' };
}

function wasAheadOnArrival(stampNanos: bigint, receivedAtMs: number): boolean {
  return stampNanos > BigInt(Math.ceil(receivedAtMs + HEARTBEAT_STAMP_ALLOWANCE_MS)) * 1_000_000n;
}

/**
 * The record a heartbeat replaces the stored one with: nothing of the previous heartbeat
 * survives. Only RAM holds still in flight carry over, since the node cannot report a VM
 * whose spawn it has not answered yet.
 */
export function nodeStateFromHeartbeat(
  heartbeat: NodeHeartbeat,
  receivedAtMs: number,
  previous?: NodeState,
): NodeState {
  const holds: Record<string, RamHold> = {};
  if (previous && previous.boot_id === heartbeat.boot_id) {
    for (const [holdId, hold] of Object.entries(previous.holds)) {
      if (hold.vm_id === undefined) holds[holdId] = hold;
    }
  }
  return withRecord({
    node_id: heartbeat.node_id,
    hostname: heartbeat.hostname,
    wg_ip: heartbeat.wg_ip,
    spawn_port: heartbeat.spawn_port ?? DEFAULT_SPAWN_PORT,
    ram_total_mb: heartbeat.ram_total_mb,
    ram_used_mb: heartbeat.ram_used_mb,
    kvm_available: heartbeat.kvm_available,
    reserved: heartbeat.reserved,
    vms: heartbeat.vms,
    boot_id: heartbeat.boot_id,
    timestamp_utc: heartbeat.timestamp_utc,
    received_at_ms: receivedAtMs,
    holds,
  });
}

/** ram_total_mb - ram_used_mb, less what the controller holds for VMs it placed, never below 0. */
export function ramAvailableMb(
  state: Pick<NodeState, 'ram_total_mb' | 'ram_used_mb' | 'holds'>,
): number {
  let held = 0;
  for (const holdId in state.holds) held += state.holds[holdId].ram_mb;
  return Math.max(0, state.ram_total_mb - state.ram_used_mb - held);
}

export function vmCount(state: Pick<NodeState, 'vms'>): number {
  return state.vms.length;
}

export function toNodeRecord(state: NodeFacts): NodeRecord {
  return {
    node_id: state.node_id,
    hostname: state.hostname,
    wg_ip: state.wg_ip,
    ram_available_mb: ramAvailableMb(state),
    vm_count: vmCount(state),
    kvm_available: state.kvm_available,
    reserved: state.reserved,
    last_heartbeat: toRfc3339(state.received_at_ms),
  };
}

/** RAM to set aside for a VM being dispatched, and how much must still be free to do so. */
export interface RamHoldRequest {
  holdId: string;
  ramMb: number;
  /** What placement required available on the node; another create may have taken it since. */
  requiredFreeMb: number;
}

/**
 * Sets RAM aside for a VM about to be dispatched, if the node still has `requiredFreeMb`
 * available. Returns the new state, or null when it no longer fits.
 */
export function withHold(state: NodeState, hold: RamHoldRequest): NodeState | null {
  if (ramAvailableMb(state) < hold.requiredFreeMb) return null;
  return withRecord({
    ...state,
    holds: { ...state.holds, [hold.holdId]: { ram_mb: hold.ramMb } },
  });
}

/** The agent accepted the VM: it is listed on the node and its RAM stays held until the next heartbeat. */
export function withDispatchedVm(state: NodeState, holdId: string, vm: VmRecord): NodeState {
  const hold = state.holds[holdId];
  const holds = { ...state.holds };
  if (hold) holds[holdId] = { ram_mb: hold.ram_mb, vm_id: vm.vm_id };
  const alreadyReported = state.vms.some((known) => known.vm_id === vm.vm_id);
  return withRecord({ ...state, holds, vms: alreadyReported ? state.vms : [...state.vms, vm] });
}

export function withoutHold(state: NodeState, holdId: string): NodeState {
  if (!(holdId in state.holds)) return state;
  const holds = { ...state.holds };
  delete holds[holdId];
  return withRecord({ ...state, holds });
}

/** The agent destroyed the VM: it leaves the listing now rather than at the next heartbeat. */
export function withoutVm(state: NodeState, vmId: string): NodeState {
  const holds: Record<string, RamHold> = {};
  for (const [holdId, hold] of Object.entries(state.holds)) {
    if (hold.vm_id !== vmId) holds[holdId] = hold;
  }
  return withRecord({ ...state, holds, vms: state.vms.filter((vm) => vm.vm_id !== vmId) });
}

/**
 * One change to a node, decided from what the store holds for it (undefined: nothing):
 * `next` takes its place (none: the store is left as it is) and `result` answers the caller.
 * Pure, because a store may decide again when another writer came first.
 */
export type NodeChange<T> = (stored: NodeState | undefined) => { next?: NodeState; result: T };

/** A heartbeat replaces the stored state unless it is out of order; the verdict says which. */
export function acceptHeartbeat(
  heartbeat: NodeHeartbeat,
  receivedAtMs: number,
): NodeChange<HeartbeatVerdict> {
  return (stored) => {
    const verdict = judgeHeartbeat(stored, heartbeat);
    return {
      next:
        verdict.kind === 'out-of-order'
          ? undefined
          : nodeStateFromHeartbeat(heartbeat, receivedAtMs, stored),
      result: verdict,
    };
  };
}

/**
 * Holds RAM on a node still live at `notBeforeMs` (receive time), if it still fits. False
 * when the node is gone, stale or no longer has room.
 */
export function holdRam(hold: RamHoldRequest, notBeforeMs: number): NodeChange<boolean> {
  return (stored) => {
    const held = stored && stored.received_at_ms >= notBeforeMs ? withHold(stored, hold) : null;
    return { next: held ?? undefined, result: held !== null };
  };
}

/** The agent accepted the VM: listed on its node, its RAM held until the next heartbeat. */
export function recordDispatchedVm(holdId: string, vm: VmRecord): NodeChange<void> {
  return changeOfStored((state) => withDispatchedVm(state, holdId, vm));
}

/** The dispatch failed: the held RAM is given back. */
export function releaseHold(holdId: string): NodeChange<void> {
  return changeOfStored((state) => withoutHold(state, holdId));
}

/** The agent destroyed the VM: it leaves the listing, and its RAM is no longer held. */
export function removeVm(vmId: string): NodeChange<void> {
  return changeOfStored((state) => withoutVm(state, vmId));
}

/** A change that only applies to a node still stored (a dropped node is not brought back). */
function changeOfStored(change: (state: NodeState) => NodeState): NodeChange<void> {
  return (stored) => ({ next: stored && change(stored), result: undefined });
}
