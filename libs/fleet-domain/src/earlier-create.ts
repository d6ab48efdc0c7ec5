/** What an earlier create with the same Idempotency-Key left on the fleet (pure rules). */
import { HeartbeatVm } from './wire/heartbeat-vm';
import { NodeState, isHoldLive, isLive, liveSince } from './node-state';
import { listedVms } from './node-vm-listing';

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
