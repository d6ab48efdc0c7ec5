import type { RestoredVm } from '../api/fleet-ops-api.client';
import { printable } from '../terminal/printable';
import { formatForwards } from './vm-ports.view';

/**
 * `vm restore`: where the VM runs now, from what, and its ports on that node's mesh address
 * (`?` when the node's address could not be read). Every string from the controller printable.
 */
export function formatRestored(
  asked: string,
  restored: RestoredVm,
  wgIp: string | undefined,
): string {
  const { vm, point } = restored;
  const lines = [
    `${printable(vm.vm_id)}${vm.vm_id === asked ? '' : ` (a new VM from ${printable(asked)})`} restored on node ${printable(vm.node_id)} from ${printable(point.source)} ${printable(point.backup_id)} taken ${printable(point.taken_at)}; starting`,
    `ports: ${formatForwards(vm, wgIp)}`,
  ];
  if (restored.replaced_node_id !== null) {
    lines.push(
      `node ${printable(restored.replaced_node_id)} will not run it again: if it comes back, its agent stops its old copy and sets its disk aside`,
    );
  }
  return lines.join('\n');
}
