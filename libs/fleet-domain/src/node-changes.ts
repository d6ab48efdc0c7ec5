/** The NodeChanges besides a heartbeat: RAM holds, dispatches, removals, silent VMs (pure rules). */
import { withDispatchFailure } from './dispatch-health';
import { compareIds } from './ids';
import { HeartbeatVm } from './wire/heartbeat-vm';
import {
  HeldForTenant,
  NodeChange,
  NodeState,
  RamHold,
  changeOfStored,
  isHoldLive,
  isLive,
  ramAvailableMb,
  withRecord,
} from './node-state';

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
