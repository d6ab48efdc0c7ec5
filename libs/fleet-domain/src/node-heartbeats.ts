/** How a node's heartbeat replaces its stored state (pure rules: see node-state.ts). */
import {
  DEFAULT_SPAWN_PORT,
  HEARTBEAT_STAMP_ALLOWANCE_MS,
  MAX_VMS_PER_HEARTBEAT,
} from './fleet.constants';
import { rfc3339ToEpochNanos } from './rfc3339';
import { HeartbeatVm } from './wire/heartbeat-vm';
import { HeartbeatDiskRoom, NodeHeartbeat } from './wire/node-heartbeat';
import { HeartbeatReplica } from './wire/vm-copies';
import {
  NodeChange,
  NodeCredential,
  NodeState,
  RamHold,
  SilentVm,
  isHoldLive,
  isLive,
  liveSince,
  speakerOf,
  withRecord,
} from './node-state';
import { keepsVmsWhenSilent } from './node-vm-listing';

/** How many of a node's last gaps between heartbeats are kept to judge whether it is late. */
const BEAT_GAPS_KEPT = 4;

/**
 * A heartbeat stamped before the stored one of its boot is a late copy (ignored) only when it
 * arrives within this of the stored one: no agent keeps a heartbeat in flight longer (ours
 * gives up after 5 s at most). One arriving later was sent later, by an agent whose clock went
 * back: it is taken, or a node that beats on time would drop out while it beats.
 */
const LATE_COPY_WINDOW_MS = 5_000;

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
    (receivedAtMs === undefined || receivedAtMs - stored.received_at_ms <= LATE_COPY_WINDOW_MS) &&
    !surelyNotBefore(heartbeat.timestamp_utc, stored.timestamp_utc)
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

/**
 * Whether stamp `sent` is surely not before `stored` without parsing either (a heartbeat's
 * usual case): both written alike, in UTC with Z and the same number of digits, as one agent
 * writes them, compare as text in time order. Not a leap second (:60, the same instant as the
 * next minute's :00). False says nothing: the stamps are then parsed and compared.
 */
export function surelyNotBefore(sent: string, stored: string): boolean {
  const length = sent.length;
  return (
    length === stored.length &&
    length >= 20 &&
    sent.charCodeAt(10) === 84 && // T
    stored.charCodeAt(10) === 84 &&
    sent.charCodeAt(length - 1) === 90 && // Z
    stored.charCodeAt(length - 1) === 90 &&
    sent.charCodeAt(17) !== 54 && // 6
    stored.charCodeAt(17) !== 54 &&
    sent >= stored
  );
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
  const notYetReported = sameBoot ? vmsOfHolds(previous.vms, holds) : [];
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
    fenced_vm_ids: heartbeat.fenced_vm_ids ?? [],
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

/** The `vms` some of `holds` were made for ([] at once without holds: most heartbeats). */
function vmsOfHolds(vms: HeartbeatVm[], holds: Record<string, RamHold>): HeartbeatVm[] {
  let accepted: Set<string | undefined> | undefined;
  for (const holdId in holds) (accepted ??= new Set()).add(holds[holdId].vm_id);
  return accepted === undefined ? [] : vms.filter((vm) => accepted.has(vm.vm_id));
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
