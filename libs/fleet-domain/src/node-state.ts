import {
  DEFAULT_SPAWN_PORT,
  HEARTBEAT_STAMP_ALLOWANCE_MS,
  MAX_VMS_PER_HEARTBEAT,
  NODE_STALE_AFTER_MS,
} from './fleet.constants';
import { DispatchFailures, withDispatchFailure } from './dispatch-health';
import { rfc3339ToEpochNanos, toRfc3339 } from './rfc3339';
import { compareIds } from './ids';
import { HeartbeatVm } from './wire/heartbeat-vm';
import { HeartbeatDiskRoom, NodeHeartbeat } from './wire/node-heartbeat';
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

/** How many of a node's last gaps between heartbeats are kept to judge whether it is late. */
const BEAT_GAPS_KEPT = 4;

/**
 * A heartbeat stamped before the stored one of its boot is a late copy (ignored) only when it
 * arrives within this of the stored one: no agent keeps a heartbeat in flight longer (ours
 * gives up after 5 s at most). One arriving later was sent later, by an agent whose clock went
 * back: it is taken, or a node that beats on time would drop out while it beats.
 */
const LATE_COPY_WINDOW_MS = 5_000;

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
    received_at_wall_ms: facts.received_at_wall_ms,
    beat_gaps_ms: facts.beat_gaps_ms,
    holds: facts.holds,
    dispatch_failures: facts.dispatch_failures,
    credential: facts.credential,
    silent_vms: facts.silent_vms,
    disk_room: facts.disk_room,
    replicas: facts.replicas,
    record: toNodeRecord(facts),
  };
}

export type HeartbeatVerdict =
  /**
   * First heartbeat of an id the controller does not know (or had dropped). `silent`: the node
   * had dropped out while it listed VMs, kept since (see keepsVmsWhenSilent), by `previous`;
   * this heartbeat replaces them, except `still_silent`: those it does not list, kept as
   * SilentVms (another machine speaks for the id, the old one may still run them).
   */
  | {
      kind: 'joined';
      silent?: {
        vms: number;
        last_heartbeat_wall_ms: number;
        previous: SilentVm['speaker'];
        still_silent: SilentVm[];
      };
    }
  /** The same agent beating again. */
  | { kind: 'refreshed' }
  /** Another boot or another host now speaks for this node id. */
  | { kind: 'taken-over'; previous: Pick<NodeState, 'boot_id' | 'wg_ip' | 'hostname'> }
  /** Older than what is stored for the same boot, and right after it: a late copy, ignored. */
  | { kind: 'out-of-order'; stored_timestamp_utc: string };

/** The oldest receive time that is still live at `nowMs`: silent for 30 s is live, longer is not. */
export function liveSince(nowMs: number): number {
  return nowMs - NODE_STALE_AFTER_MS;
}

/** Whether the node was heard from at or after `notBeforeMs` (see liveSince). */
export function isLive(state: Pick<NodeState, 'received_at_ms'>, notBeforeMs: number): boolean {
  return state.received_at_ms >= notBeforeMs;
}

/**
 * Whether a node that drops out (silent for more than 30 s) is kept, out of every node listing
 * and of placement, for its VMs: when it listed any (or kept SilentVms). Its agent may be
 * stopped while its QEMU processes run on (systemctl stop leaves them), so its last-reported
 * VMs stay listed (GET /v1/vms), each with its node, until the node heartbeats again (which
 * replaces those it lists; those it does not list stay, as SilentVms), they are forgotten one
 * by one (forgetSilentVm), or SILENT_NODES_KEPT newer silent nodes push it out. A node that
 * listed none is dropped whole.
 */
export function keepsVmsWhenSilent(state: Pick<NodeState, 'vms' | 'silent_vms'>): boolean {
  return state.vms.length > 0 || state.silent_vms.length > 0;
}

/** A VM as GET /v1/vms lists it: on `node`, whose agent is silent since `silent_since_wall_ms`. */
export interface ListedVm {
  vm: HeartbeatVm;
  node: NodeState;
  /** Set for a VM no live agent manages: its node dropped out, or it is a SilentVm. */
  silent_since_wall_ms?: number;
}

/**
 * Every VM the stored nodes list, as of `notBeforeMs` (liveSince of now): those of live nodes,
 * then the last-reported ones of silent nodes and the SilentVms, except any a live node lists
 * (its report is the fresher one: no VM is listed twice).
 */
export function listedVms(nodes: readonly NodeState[], notBeforeMs: number): ListedVm[] {
  const listed: ListedVm[] = [];
  const managed = new Set<string>();
  for (const node of nodes) {
    if (!isLive(node, notBeforeMs)) continue;
    for (const vm of node.vms) {
      listed.push({ vm, node });
      managed.add(vm.vm_id);
    }
  }
  for (const node of nodes) {
    if (!isLive(node, notBeforeMs)) {
      for (const vm of node.vms) {
        if (!managed.has(vm.vm_id)) {
          listed.push({ vm, node, silent_since_wall_ms: node.received_at_wall_ms });
        }
      }
    }
    for (const silent of node.silent_vms) {
      if (!managed.has(silent.vm.vm_id)) {
        listed.push({ vm: silent.vm, node, silent_since_wall_ms: silent.silent_since_wall_ms });
      }
    }
  }
  return listed;
}

/** A VM a heartbeat lists whose id another stored node holds: ignored for that heartbeat. */
export interface ForeignVm {
  vm_id: string;
  /** The node that holds the id: it listed the VM first, or the controller dispatched it there. */
  owner: string;
}

/**
 * Every VM id a stored node holds: those it lists, its SilentVms and its holds' minted ids. The
 * Redis store's scripts say the same in Lua (redis-nodes.repository.ts, heldVmIds): change both.
 */
export function heldVmIds(node: NodeState): string[] {
  const ids = node.vms.map((vm) => vm.vm_id);
  for (const silent of node.silent_vms) ids.push(silent.vm.vm_id);
  for (const holdId in node.holds) {
    const vmId = node.holds[holdId].vm_id;
    if (vmId !== undefined) ids.push(vmId);
  }
  return ids;
}

/** What a change of one node's state does to the VM ids it holds (see heldVmIds). */
export interface HeldVmIdChanges {
  readonly gained: readonly string[];
  readonly lost: readonly string[];
}

const NO_HELD_VM_ID_CHANGES: HeldVmIdChanges = Object.freeze({ gained: [], lost: [] });

/**
 * The VM ids a node comes to hold and those it stops holding as its stored state goes from
 * `before` to `after` (undefined: none stored): what a store's index of VM ids follows.
 */
export function heldVmIdChanges(
  before: NodeState | undefined,
  after: NodeState | undefined,
): HeldVmIdChanges {
  const held = before ? heldVmIds(before) : [];
  const holds = after ? heldVmIds(after) : [];
  // A heartbeat listing what the last one did, in the same order: the usual case, no Sets.
  if (held.length === holds.length && held.every((vmId, index) => vmId === holds[index])) {
    return NO_HELD_VM_ID_CHANGES;
  }
  const had = new Set(held);
  const has = new Set(holds);
  return {
    gained: [...has].filter((vmId) => !had.has(vmId)),
    lost: [...had].filter((vmId) => !has.has(vmId)),
  };
}

/**
 * Of `vmIds`, those a node of `stored` other than `exceptNodeId` holds (see heldVmIds), each
 * with the first such node: what a store without an index of VM ids (or whose index is not
 * complete) answers NodesRepository.ownersOf with. Reads every node.
 */
export function vmOwnersAmong(
  stored: readonly NodeState[],
  vmIds: readonly string[],
  exceptNodeId: string,
): Map<string, string> {
  const wanted = new Set(vmIds);
  const owners = new Map<string, string>();
  for (const node of stored) {
    if (node.node_id === exceptNodeId) continue;
    for (const vmId of heldVmIds(node)) {
      if (wanted.has(vmId) && !owners.has(vmId)) owners.set(vmId, node.node_id);
    }
  }
  return owners;
}

/**
 * The VMs of a heartbeat whose ids another stored node (live or silent) holds: a VM id belongs
 * to the first node that listed it (Kubernetes' NodeRestriction: a kubelet modifies only the
 * pods bound to it). Such a VM is not listed twice, and nothing is routed to the claimer.
 * `owners`: for ids of `vms`, a node other than the heartbeat's holding it
 * (NodesRepository.ownersOf); `known`: ids the node itself held already, never foreign.
 */
export function foreignVms(
  vms: readonly HeartbeatVm[],
  owners: ReadonlyMap<string, string>,
  known: ReadonlySet<string> = new Set(),
): ForeignVm[] {
  const foreign: ForeignVm[] = [];
  for (const vm of vms) {
    if (known.has(vm.vm_id)) continue;
    const owner = owners.get(vm.vm_id);
    if (owner !== undefined) foreign.push({ vm_id: vm.vm_id, owner });
  }
  return foreign;
}

/**
 * Decides what a heartbeat received at `receivedAtMs` (Clock.now) means against the record
 * stored for its node id, if any.
 *
 * A heartbeat of the stored boot stamped before the stored one, and received within 5 s of it,
 * is a late copy, ignored. But the stored stamp orders later heartbeats only if it was not
 * ahead of the controller's wall clock when it arrived (beyond the NTP allowance): otherwise
 * one forged far-future stamp would make the real agent's heartbeats look old until the node
 * dropped. Such a stamp is not refused, it is just not trusted, so the next real heartbeat
 * replaces it. Without `receivedAtMs`, every older stamp counts as a late copy.
 */
export function judgeHeartbeat(
  stored: NodeState | undefined,
  heartbeat: NodeHeartbeat,
  receivedAtMs?: number,
): HeartbeatVerdict {
  if (!stored) return { kind: 'joined' };
  if (
    stored.boot_id === heartbeat.boot_id &&
    (receivedAtMs === undefined || receivedAtMs - stored.received_at_ms <= LATE_COPY_WINDOW_MS)
  ) {
    const storedAt = rfc3339ToEpochNanos(stored.timestamp_utc);
    const sentAt = rfc3339ToEpochNanos(heartbeat.timestamp_utc);
    if (
      storedAt !== null &&
      sentAt !== null &&
      sentAt < storedAt &&
      !wasAheadOnArrival(storedAt, stored.received_at_wall_ms)
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
      previous: speakerOf(stored),
    };
  }
  return { kind: 'refreshed' };
}

function wasAheadOnArrival(stampNanos: bigint, receivedAtWallMs: number): boolean {
  return (
    stampNanos > BigInt(Math.ceil(receivedAtWallMs + HEARTBEAT_STAMP_ALLOWANCE_MS)) * 1_000_000n
  );
}

/**
 * The record a heartbeat replaces the stored one with: nothing of the previous heartbeat
 * survives. Only RAM holds of the same boot carry over, until the heartbeat lists their VM
 * (by id, or by the key it was spawned with, for a spawn not answered yet) or their deadline
 * has passed: the node's own figures count a VM it lists, not one it has yet to report. So
 * does a VM its agent accepted (recorded with its hold) that a heartbeat sampled before the
 * spawn does not list yet: it stays listed, and a retry with its Idempotency-Key finds it.
 * `receivedAtWallMs` is the wall clock at receipt, for a clock whose two readings differ;
 * `credential` what the heartbeat was taken with (none: the previous one's is not kept either).
 */
export function nodeStateFromHeartbeat(
  heartbeat: NodeHeartbeat,
  receivedAtMs: number,
  previous?: NodeState,
  receivedAtWallMs = receivedAtMs,
  credential: NodeCredential | null = null,
): NodeState {
  const sameBoot = previous !== undefined && previous.boot_id === heartbeat.boot_id;
  const holds = sameBoot ? holdsNotYetReported(previous.holds, heartbeat.vms, receivedAtMs) : {};
  const accepted = new Set(Object.values(holds).map((hold) => hold.vm_id));
  const notYetReported = sameBoot ? previous.vms.filter((vm) => accepted.has(vm.vm_id)) : [];
  return withRecord({
    node_id: heartbeat.node_id,
    hostname: heartbeat.hostname,
    wg_ip: heartbeat.wg_ip,
    spawn_port: heartbeat.spawn_port ?? DEFAULT_SPAWN_PORT,
    ram_total_mb: heartbeat.ram_total_mb,
    ram_used_mb: heartbeat.ram_used_mb,
    kvm_available: heartbeat.kvm_available,
    reserved: heartbeat.reserved,
    vms: notYetReported.length === 0 ? heartbeat.vms : [...heartbeat.vms, ...notYetReported],
    boot_id: heartbeat.boot_id,
    timestamp_utc: heartbeat.timestamp_utc,
    received_at_ms: receivedAtMs,
    received_at_wall_ms: receivedAtWallMs,
    beat_gaps_ms: sameBoot
      ? [...previous.beat_gaps_ms, receivedAtMs - previous.received_at_ms].slice(-BEAT_GAPS_KEPT)
      : [],
    holds,
    // Kept whatever boot_id the heartbeat names (anyone with the node token can send a new
    // one): only a successful dispatch clears it, and its backoff ends by itself.
    dispatch_failures: previous?.dispatch_failures ?? null,
    credential,
    silent_vms: previous ? notListed(previous.silent_vms, heartbeat.vms) : [],
    disk_room: diskRoomOf(heartbeat.disk_room),
    replicas: replicasOf(heartbeat.replicas, heartbeat.timestamp_utc),
  });
}

/**
 * Their four fields only, whatever else the objects carried; a copy said to be taken after the
 * heartbeat itself was sent is dropped (a node cannot hold a copy from its own future: such a
 * claim would show a VM as freshly copied and keep its stale-copy alert quiet).
 */
function replicasOf(
  replicas: HeartbeatReplica[] | null | undefined,
  sentAt: string,
): HeartbeatReplica[] {
  if (!replicas) return [];
  const sentNs = rfc3339ToEpochNanos(sentAt);
  const taken = replicas.filter(({ copied_at }) => {
    const copiedNs = rfc3339ToEpochNanos(copied_at);
    return sentNs !== null && copiedNs !== null && copiedNs <= sentNs;
  });
  return taken.map(({ vm_id, source_node_id, copied_at, size_bytes }) => ({
    vm_id,
    source_node_id,
    copied_at,
    size_bytes,
  }));
}

/** Its five figures only, whatever else the object carried. */
function diskRoomOf(room: HeartbeatDiskRoom | null | undefined): HeartbeatDiskRoom | null {
  // null passes validation as absent (IsOptional).
  if (room === undefined || room === null) return null;
  return {
    room_mb: room.room_mb,
    committed_mb: room.committed_mb,
    committable_mb: room.committable_mb,
    reserve_mb: room.reserve_mb,
    overcommit: room.overcommit,
  };
}

/** The SilentVms a heartbeat listing `vms` does not list: its agent manages the others. */
function notListed(silentVms: SilentVm[], vms: readonly HeartbeatVm[]): SilentVm[] {
  if (silentVms.length === 0) return silentVms;
  const listed = new Set(vms.map((vm) => vm.vm_id));
  return silentVms.filter((silent) => !listed.has(silent.vm.vm_id));
}

/**
 * What a silent node's VMs become when its id heartbeats again, listing `vms`: the VMs (its
 * own and its SilentVms) that heartbeat does not list, as SilentVms. An agent on the same
 * VM_DISK_DIR re-lists every VM it has (Stopped ones too, after a reboot), so one missing is
 * another machine's: a cloned VM_NODE_ID, or the agent started on another VM_DISK_DIR.
 */
function stillSilent(stored: NodeState, vms: readonly HeartbeatVm[]): SilentVm[] {
  const speaker = speakerOf(stored);
  const lastListed: SilentVm[] = stored.vms.map((vm) => ({
    vm,
    silent_since_wall_ms: stored.received_at_wall_ms,
    speaker,
  }));
  return notListed([...stored.silent_vms, ...lastListed], vms).slice(-MAX_VMS_PER_HEARTBEAT);
}

function holdsNotYetReported(
  holds: Record<string, RamHold>,
  vms: readonly HeartbeatVm[],
  nowMs: number,
): Record<string, RamHold> {
  const kept: Record<string, RamHold> = {};
  let listed: Set<string> | undefined;
  for (const holdId in holds) {
    const hold = holds[holdId];
    if (!isHoldLive(hold, nowMs)) continue;
    listed ??= new Set(vms.flatMap((vm) => [vm.vm_id, vm.idempotency_key ?? '']));
    if ((hold.vm_id !== undefined && listed.has(hold.vm_id)) || listed.has(hold.spawn_key)) {
      continue;
    }
    kept[holdId] = hold;
  }
  return kept;
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

/** RAM to set aside for a VM being dispatched, and how much must still be free to do so. */
export interface RamHoldRequest {
  holdId: string;
  ramMb: number;
  /** What placement required available on the node; another create may have taken it since. */
  requiredFreeMb: number;
  /** Now, on the receive-time clock: holds past their deadline are ended on the way. */
  nowMs: number;
  /** When the hold ends if no heartbeat has listed the VM by then. */
  expiresAtMs: number;
  /** The Idempotency-Key the VM is spawned with. */
  spawnKey: string;
  /** The id the controller minted for the VM. */
  vmId?: string;
  /** The VM's tenant, when it has one: the hold counts against its quotas. */
  tenant?: HeldForTenant;
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

/**
 * A heartbeat replaces the stored state unless it is out of order; the verdict says which.
 * Received at `receivedAtMs` (Clock.now) and `receivedAtWallMs` (Clock.wallNow), taken with
 * `credential`. A node stored but silent for more than 30 s (not swept yet, or kept for its
 * VMs) had dropped out: the heartbeat enrolls it anew, and nothing of the stored state carries
 * over but the VMs the heartbeat does not list, kept as SilentVms (see stillSilent).
 */
export function acceptHeartbeat(
  heartbeat: NodeHeartbeat,
  receivedAtMs: number,
  receivedAtWallMs = receivedAtMs,
  credential: NodeCredential | null = null,
): NodeChange<HeartbeatVerdict> {
  return (stored) => {
    if (stored && !isLive(stored, liveSince(receivedAtMs))) {
      const next = nodeStateFromHeartbeat(
        heartbeat,
        receivedAtMs,
        undefined,
        receivedAtWallMs,
        credential,
      );
      if (!keepsVmsWhenSilent(stored)) return { next, result: { kind: 'joined' } };
      const silent = {
        vms: stored.vms.length + stored.silent_vms.length,
        last_heartbeat_wall_ms: stored.received_at_wall_ms,
        previous: speakerOf(stored),
        still_silent: stillSilent(stored, heartbeat.vms),
      };
      return {
        next:
          silent.still_silent.length === 0
            ? next
            : withRecord({ ...next, silent_vms: silent.still_silent }),
        result: { kind: 'joined', silent },
      };
    }
    const verdict = judgeHeartbeat(stored, heartbeat, receivedAtMs);
    return {
      next:
        verdict.kind === 'out-of-order'
          ? undefined
          : nodeStateFromHeartbeat(heartbeat, receivedAtMs, stored, receivedAtWallMs, credential),
      result: verdict,
    };
  };
}

/**
 * Sets RAM aside for a VM about to be dispatched, on a node still live at `notBeforeMs`
 * (receive time) that still has `requiredFreeMb` available; holds past their deadline are
 * ended on the way. False when the node is gone, stale or no longer has room.
 */
export function holdRam(hold: RamHoldRequest, notBeforeMs: number): NodeChange<boolean> {
  return (stored) => {
    if (!stored || stored.received_at_ms < notBeforeMs) return { result: false };
    if (ramAvailableMb(stored, hold.nowMs) < hold.requiredFreeMb) return { result: false };
    const holds: Record<string, RamHold> = {};
    for (const holdId in stored.holds) {
      if (isHoldLive(stored.holds[holdId], hold.nowMs)) holds[holdId] = stored.holds[holdId];
    }
    holds[hold.holdId] = {
      ram_mb: hold.ramMb,
      expires_at_ms: hold.expiresAtMs,
      spawn_key: hold.spawnKey,
    };
    if (hold.vmId !== undefined) holds[hold.holdId].vm_id = hold.vmId;
    if (hold.tenant !== undefined) holds[hold.holdId].tenant = hold.tenant;
    return { next: withRecord({ ...stored, holds }), result: true };
  };
}

/**
 * The agent accepted the VM: it is listed on its node now, and its RAM stays held until a
 * heartbeat lists it too (or the hold's deadline passes). The dispatch worked, so the node's
 * failed dispatches are forgotten: it is placed on as any other again.
 */
export function recordDispatchedVm(holdId: string, vm: HeartbeatVm): NodeChange<void> {
  return changeOfStored((state) => {
    const hold = state.holds[holdId];
    const holds = { ...state.holds };
    if (hold) holds[holdId] = { ...hold, vm_id: vm.vm_id };
    const alreadyReported = state.vms.some((known) => known.vm_id === vm.vm_id);
    return withRecord({
      ...state,
      holds,
      vms: alreadyReported ? state.vms : [...state.vms, vm],
      dispatch_failures: null,
    });
  });
}

/** The dispatch failed: the held RAM is given back. */
export function releaseHold(holdId: string): NodeChange<void> {
  return changeOfStored((state) => {
    if (!(holdId in state.holds)) return state;
    const holds = { ...state.holds };
    delete holds[holdId];
    return withRecord({ ...state, holds });
  });
}

/** The agent destroyed the VM: it leaves the listing now, and its RAM is no longer held. */
export function removeVm(vmId: string): NodeChange<void> {
  return changeOfStored((state) => {
    const holds: Record<string, RamHold> = {};
    for (const [holdId, hold] of Object.entries(state.holds)) {
      if (hold.vm_id !== vmId) holds[holdId] = hold;
    }
    return withRecord({ ...state, holds, vms: state.vms.filter((vm) => vm.vm_id !== vmId) });
  });
}

/** A dispatch to the node's agent failed for a reason of the node's (unreachable, 5xx). */
export function noteDispatchFailure(reason: string, nowMs: number): NodeChange<void> {
  return changeOfStored((state) =>
    withRecord({
      ...state,
      dispatch_failures: withDispatchFailure(state.dispatch_failures ?? undefined, reason, nowMs),
    }),
  );
}

/**
 * What forgetting a VM of a silent node did: `forgotten` (the record is gone; the node too
 * once it has no VM left), `node-live` (the node heartbeats again: its agent can be asked to
 * destroy the VM instead), `unknown` (no such VM on the node, or no such node).
 */
export type ForgetOutcome = 'forgotten' | 'node-live' | 'unknown';

/**
 * Forgets a VM of a node silent since before `notBeforeMs` (liveSince of now), or one of its
 * SilentVms (live node or not): for a machine gone for good, whose agent will never be back to
 * destroy it. Nothing is stopped anywhere.
 */
export function forgetSilentVm(vmId: string, notBeforeMs: number): NodeChange<ForgetOutcome> {
  return (stored) => {
    if (!stored) return { result: 'unknown' };
    const live = isLive(stored, notBeforeMs);
    const silentVms = stored.silent_vms.filter((silent) => silent.vm.vm_id !== vmId);
    if (silentVms.length < stored.silent_vms.length) {
      if (!live && stored.vms.length === 0 && silentVms.length === 0) {
        return { remove: true, result: 'forgotten' };
      }
      return { next: withRecord({ ...stored, silent_vms: silentVms }), result: 'forgotten' };
    }
    if (live) return { result: 'node-live' };
    const vms = stored.vms.filter((vm) => vm.vm_id !== vmId);
    if (vms.length === stored.vms.length) return { result: 'unknown' };
    if (vms.length === 0 && stored.silent_vms.length === 0) {
      return { remove: true, result: 'forgotten' };
    }
    return { next: withRecord({ ...stored, vms }), result: 'forgotten' };
  };
}

/**
 * Of the nodes kept silent, those beyond the newest `keep` (by their last heartbeat, oldest
 * first): what a store forgets so that what it keeps stays bounded.
 */
export function silentBeyond<S extends Pick<NodeState, 'received_at_ms' | 'node_id'>>(
  silent: readonly S[],
  keep: number,
): S[] {
  if (silent.length <= keep) return [];
  return [...silent]
    .sort((a, b) => a.received_at_ms - b.received_at_ms || compareIds(a.node_id, b.node_id))
    .slice(0, silent.length - keep);
}

/** A hold the sweep ended because its deadline passed before any heartbeat listed its VM. */
export interface EndedHold {
  holdId: string;
  hold: RamHold;
}

/** Ends the node's holds past their deadline at `nowMs`, and says which. */
export function endExpiredHolds(nowMs: number): NodeChange<EndedHold[]> {
  return (stored) => {
    if (!stored) return { result: [] };
    const ended: EndedHold[] = [];
    const holds: Record<string, RamHold> = {};
    for (const [holdId, hold] of Object.entries(stored.holds)) {
      if (isHoldLive(hold, nowMs)) holds[holdId] = hold;
      else ended.push({ holdId, hold });
    }
    return {
      next: ended.length > 0 ? withRecord({ ...stored, holds }) : undefined,
      result: ended,
    };
  };
}

/**
 * A VM the controller itself dispatched with an Idempotency-Key (recorded before its agent is
 * asked, and again once it accepted): the only VM that key can answer. A VM a node merely
 * reports with a key never does, or any node could squat a guessable key.
 */
export interface KeyedDispatch {
  spawnKey: string;
  nodeId: string;
  vmId: string;
  /**
   * Set while the agent has not answered (on the store's clock, like `now()`): until then it
   * may still make the VM, at the latest by the spawn's deadline as its clock reads it
   * (SPAWN_DEADLINE_SKEW_MS covers a clock behind), so no other node is asked for the key.
   */
  unresolvedUntilMs?: number;
}

/** What an earlier create with the same Idempotency-Key left on the fleet. */
export type EarlierCreate =
  /**
   * Its VM, the one the controller dispatched with the key, is still listed by the node it was
   * dispatched to; with `silent_since_wall_ms` when no live agent manages it (see ListedVm).
   */
  | {
      kind: 'vm';
      node: NodeState;
      vm: HeartbeatVm;
      spawn_key: string;
      silent_since_wall_ms?: number;
    }
  /**
   * Its dispatch to a live node is unresolved: that agent may be making the VM right now,
   * under `vm_id`; `hold_id`: the hold still counting its RAM there, if any.
   */
  | { kind: 'in-flight'; node: NodeState; hold_id?: string; spawn_key: string; vm_id: string }
  /**
   * Its dispatch is unanswered and its node is not live (frozen, cut off): nothing can be
   * asked of it, and no other node may be, until `until_ms` (the store's clock).
   */
  | { kind: 'unresolved'; node_id: string; spawn_key: string; until_ms: number };

/**
 * What the earlier create with a key left, as the controller recorded it (`dispatched`): its
 * VM, if the node it was dispatched to still lists it (see listedVms: a silent node too); else
 * that dispatch while it is unresolved at `nowMs`; else nothing (the agent refused it, or its
 * VM is gone). Keys nodes report with their VMs are never looked at: only what the controller
 * itself did answers a client's key.
 */
export function findEarlierCreate(
  nodes: readonly NodeState[],
  nowMs: number,
  dispatched: KeyedDispatch,
): EarlierCreate | undefined {
  const notBeforeMs = liveSince(nowMs);
  const { spawnKey, nodeId, vmId, unresolvedUntilMs: until } = dispatched;
  for (const { vm, node, silent_since_wall_ms } of listedVms(nodes, notBeforeMs)) {
    if (vm.vm_id === vmId && node.node_id === nodeId) {
      const found: EarlierCreate = { kind: 'vm', node, vm, spawn_key: spawnKey };
      if (silent_since_wall_ms !== undefined) found.silent_since_wall_ms = silent_since_wall_ms;
      return found;
    }
  }
  if (until === undefined || nowMs >= until) return undefined;
  const node = nodes.find((stored) => stored.node_id === nodeId && isLive(stored, notBeforeMs));
  if (!node) return { kind: 'unresolved', node_id: nodeId, spawn_key: spawnKey, until_ms: until };
  const inFlight: EarlierCreate = { kind: 'in-flight', node, spawn_key: spawnKey, vm_id: vmId };
  const holdId = Object.keys(node.holds).find((id) => node.holds[id].vm_id === vmId);
  if (holdId !== undefined && isHoldLive(node.holds[holdId], nowMs)) inFlight.hold_id = holdId;
  return inFlight;
}

/** A change that only applies to a node still stored (a dropped node is not brought back). */
function changeOfStored(change: (state: NodeState) => NodeState): NodeChange<void> {
  return (stored) => ({ next: stored && change(stored), result: undefined });
}
