import { NodeState, isHoldLive } from './node-state';
import { heldVmIds } from './node-vm-listing';

/** The spawn key of the RAM a move holds on its target node: `move:<vm_id>`. */
export function moveSpawnKey(vmId: string): string {
  return `move:${vmId}`;
}

/**
 * The spawn key of the RAM a restore (an operator's or recovery's) holds on its target node:
 * `restore:<vm_id>`, the same as the restore's own claim key.
 */
export function restoreSpawnKey(vmId: string): string {
  return `restore:${vmId}`;
}

/**
 * Whether a node whose heartbeat lists `vmId`, moved or restored elsewhere before, is spared
 * superseded_vm_ids: it holds the VM's id now (a later move brought it there), or a move of the
 * VM to it is under way, or a restore of it there (its RAM held for it, live at `nowMs`): its agent must not set aside the
 * VM it is taking in.
 */
export function keepsMovedVm(node: NodeState, vmId: string, nowMs: number): boolean {
  if (heldVmIds(node).includes(vmId)) return true;
  // A restore back onto a node the VM was moved or restored away from before: its first
  // heartbeat listing the VM comes before the restore is recorded (seen in recovery trials).
  const keys = [moveSpawnKey(vmId), restoreSpawnKey(vmId)];
  return Object.values(node.holds).some(
    (hold) => keys.includes(hold.spawn_key) && isHoldLive(hold, nowMs),
  );
}
