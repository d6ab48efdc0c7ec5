import { NodeState, isHoldLive } from './node-state';
import { heldVmIds } from './node-vm-listing';

/** The spawn key of the RAM a move holds on its target node: `move:<vm_id>`. */
export function moveSpawnKey(vmId: string): string {
  return `move:${vmId}`;
}

/**
 * Whether a node whose heartbeat lists `vmId`, moved or restored elsewhere before, is spared
 * superseded_vm_ids: it holds the VM's id now (a later move brought it there), or a move of the
 * VM to it is under way (its RAM held for it, live at `nowMs`): its agent must not set aside the
 * VM it is taking in.
 */
export function keepsMovedVm(node: NodeState, vmId: string, nowMs: number): boolean {
  if (heldVmIds(node).includes(vmId)) return true;
  return Object.values(node.holds).some(
    (hold) => hold.spawn_key === moveSpawnKey(vmId) && isHoldLive(hold, nowMs),
  );
}
