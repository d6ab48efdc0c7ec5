import { NODE_STALE_AFTER_MS } from './fleet.constants';
import { DispatchFailures } from './dispatch-health';
import { toRfc3339 } from './rfc3339';
import { HeartbeatVm } from './wire/heartbeat-vm';
import { HeartbeatDiskRoom } from './wire/node-heartbeat';
import { NodeRecord } from './wire/node-record';
import { HeartbeatReplica } from './wire/vm-copies';

/**
 * RAM the controller set aside on a node for a VM it is placing there, until a heartbeat of
 * the node lists that VM or `expires_at_ms` passes, whichever comes first: a controller that
 * died mid-dispatch leaves nothing held for longer than the dispatch could have taken.
 * `vm_id` is the id the controller minted for the VM (holds stored before ids were minted set
 * it once the agent accepted the VM): a heartbeat of the node listing it ends the hold.
 */
export interface RamHold {
  ram_mb: number;
  /** Receive-time clock (ms since the epoch): the dispatch timeout plus a margin after holding. */
  expires_at_ms: number;
  /** The Idempotency-Key the VM is spawned with: a heartbeat listing it ends the hold. */
  spawn_key: string;
  vm_id?: string;
  /**
   * The tenant the VM is made for, with what its quota counts beside the RAM: a create in
   * flight counts against the tenant's quotas until its VM is listed (see tenantUse).
   */
  tenant?: HeldForTenant;
}

/** What a hold counts against its tenant's quotas (see tenant-quotas.ts). */
export interface HeldForTenant {
  tenant_id: string;
  vcpu_count: number;
  disk_gb?: number;
}

/**
 * Which credential the controller took a node's heartbeat with: its own token under
 * VM_FLEET_NODE_SECRET (`own`), its own under VM_FLEET_NODE_SECRET_PREVIOUS (`previous-secret`,
 * a rotation under way), or the shared VM_FLEET_NODE_TOKEN (`shared`: a controller without the
 * secret, or a migration to per-node tokens under way).
 */
export type NodeCredential = 'own' | 'previous-secret' | 'shared';

/**
 * A VM an earlier speaker for a node id listed before the node dropped out, which no heartbeat
 * under that id has listed since: another machine (a cloned VM_NODE_ID, another VM_DISK_DIR)
 * now speaks for the id, and the VM may still run on the old one, unmanaged. It stays listed
 * (with node_silent_since), out of the node's figures and of placement, until a heartbeat
 * under the id lists it again or it is forgotten (forgetSilentVm).
 */
export interface SilentVm {
  vm: HeartbeatVm;
  /** The wall clock at the last heartbeat that listed it: shown as node_silent_since. */
  silent_since_wall_ms: number;
  /** Who listed it: the agent that may still run it. */
  speaker: NodeSpeaker;
}

/** One agent speaking for a node id, as its heartbeats name it. */
export type NodeSpeaker = Pick<NodeState, 'boot_id' | 'wg_ip' | 'hostname'>;

/** The agent whose heartbeat `state` is. */
export function speakerOf(state: NodeSpeaker): NodeSpeaker {
  return { boot_id: state.boot_id, wg_ip: state.wg_ip, hostname: state.hostname };
}

/** `10.8.0.1 (host a, boot b1)`, as log lines and refusals name an agent. */
export function describeSpeaker(speaker: NodeSpeaker): string {
  return `${speaker.wg_ip} (host ${speaker.hostname}, boot ${speaker.boot_id})`;
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
  /** As reported, with the idempotency keys the controller keeps but never shows. */
  vms: HeartbeatVm[];
  boot_id: string;
  timestamp_utc: string;
  /**
   * The controller's receive time (ms since the epoch) on the clock durations are measured on
   * (Clock.now, which does not step): the only liveness signal.
   */
  received_at_ms: number;
  /**
   * The controller's wall clock at receipt (Clock.wallNow): shown as last_heartbeat and held
   * against the agent's stamps, never used to judge liveness.
   */
  received_at_wall_ms: number;
  /** Gaps (ms) between this boot's last few heartbeats, oldest first: see beatIntervalMs. */
  beat_gaps_ms: number[];
  holds: Record<string, RamHold>;
  /** Dispatches to its agent that failed in a row (null: the last one worked, or none was made). */
  dispatch_failures: DispatchFailures | null;
  /**
   * The credential its last heartbeat was taken with (null: none, the controller was open). Its
   * agent is called with the token of this kind and no other (it heartbeats with the token its
   * API checks): a holder of an older or shared credential learns no newer one. Never shown.
   */
  credential: NodeCredential | null;
  /**
   * VMs of an earlier speaker for this id that its heartbeats no longer list (see SilentVm),
   * newest last, at most MAX_VMS_PER_HEARTBEAT. Never in `record`: no RAM, no VM count.
   */
  silent_vms: SilentVm[];
  /** Its last heartbeat's disk room (null: it sent none). Shown beside RAM, never in `record`. */
  disk_room: HeartbeatDiskRoom | null;
  /**
   * The copies of other nodes' VMs its last heartbeat said it holds (empty: none, or an agent
   * before copies). Never in `record`.
   */
  replicas: HeartbeatReplica[];
  /**
   * The protected VMs its last heartbeat said it fenced (etcd mode: its lease ran out; empty:
   * none, or an agent before fencing). Never in `record`: metrics and the console show them.
   */
  fenced_vm_ids: string[];
  /** The record every read shows, derived once per change rather than once per read. */
  readonly record: NodeRecord;
}

type NodeFacts = Omit<NodeState, 'record'>;

/**
 * Every NodeState is built by this one literal, so all of them share one object shape: V8
 * then keeps them compact and reads their fields fast (spread-built copies were neither).
 */
export function withRecord(facts: NodeFacts): NodeState {
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
    received_at_wall_ms: facts.received_at_wall_ms,
    beat_gaps_ms: facts.beat_gaps_ms,
    holds: facts.holds,
    dispatch_failures: facts.dispatch_failures,
    credential: facts.credential,
    silent_vms: facts.silent_vms,
    disk_room: facts.disk_room,
    replicas: facts.replicas,
    fenced_vm_ids: facts.fenced_vm_ids,
    record: toNodeRecord(facts),
  };
}

/** The oldest receive time that is still live at `nowMs`: silent for 30 s is live, longer is not. */
export function liveSince(nowMs: number): number {
  return nowMs - NODE_STALE_AFTER_MS;
}

/** Whether the node was heard from at or after `notBeforeMs` (see liveSince). */
export function isLive(state: Pick<NodeState, 'received_at_ms'>, notBeforeMs: number): boolean {
  return state.received_at_ms >= notBeforeMs;
}

/** A hold counts until its deadline. */
export function isHoldLive(hold: RamHold, nowMs: number): boolean {
  return hold.expires_at_ms > nowMs;
}

/**
 * ram_total_mb - ram_used_mb, less what the controller holds for VMs it is placing, never
 * below 0. Given `nowMs`, holds past their deadline no longer count; without it every stored
 * hold does (the listings' records, which the sweep re-derives once it ends expired holds).
 */
export function ramAvailableMb(
  state: Pick<NodeState, 'ram_total_mb' | 'ram_used_mb' | 'holds'>,
  nowMs?: number,
): number {
  let held = 0;
  for (const holdId in state.holds) {
    const hold = state.holds[holdId];
    if (nowMs === undefined || isHoldLive(hold, nowMs)) held += hold.ram_mb;
  }
  return Math.max(0, state.ram_total_mb - state.ram_used_mb - held);
}

/**
 * How often the node beats, as observed: the longest of its last few gaps between heartbeats
 * of this boot. The longest, so that an extra beat right after a create (agents beat at once
 * after one) does not make a node look late. Null until it has beaten twice.
 */
export function beatIntervalMs(state: Pick<NodeState, 'beat_gaps_ms'>): number | null {
  const gaps = state.beat_gaps_ms;
  return gaps.length === 0 ? null : Math.max(...gaps);
}

/** The first deadline among the node's holds, or null when it holds nothing. */
export function earliestHoldDeadline(state: Pick<NodeState, 'holds'>): number | null {
  let earliest: number | null = null;
  for (const holdId in state.holds) {
    const deadline = state.holds[holdId].expires_at_ms;
    if (earliest === null || deadline < earliest) earliest = deadline;
  }
  return earliest;
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
    last_heartbeat: toRfc3339(state.received_at_wall_ms),
  };
}

/**
 * One change to a node, decided from what the store holds for it (undefined: nothing):
 * `next` takes its place (none: the store is left as it is) and `result` answers the caller.
 * Pure, because a store may decide again when another writer came first. Every change to a
 * stored node is one of the NodeChanges below, passed to NodesRepository.update.
 */
export type NodeChange<T> = (stored: NodeState | undefined) => {
  next?: NodeState;
  /** The store forgets the node altogether (`next` is then ignored). */
  remove?: boolean;
  result: T;
};

/** A change that only applies to a node still stored (a dropped node is not brought back). */
export function changeOfStored(change: (state: NodeState) => NodeState): NodeChange<void> {
  return (stored) => ({ next: stored && change(stored), result: undefined });
}
