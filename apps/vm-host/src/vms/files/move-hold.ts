import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { VmFiles } from './vm-files';

/**
 * The record, in a VM's run folder, of a live move out whose migration completed while the new
 * node never said whether it took the guest over (apps/vm-host/src/moves/paused-moves.service.ts).
 * While it is there the VM is held: its paused QEMU is not resumed, and a VM whose QEMU ended
 * (a reboot, a power cut) is not started again from its disk, for the new node may run it.
 */
export const MOVE_HOLD_FILE = 'move-unconfirmed.json';

export function moveHoldPath(files: VmFiles, vmId: string): string {
  return join(files.runDir(vmId), MOVE_HOLD_FILE);
}

export function heldByMove(files: VmFiles, vmId: string): Promise<boolean> {
  return access(moveHoldPath(files, vmId)).then(
    () => true,
    () => false,
  );
}
