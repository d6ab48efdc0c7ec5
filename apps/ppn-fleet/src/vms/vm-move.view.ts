import type { MovedVm } from '../api/fleet-ops-api.client';
import { printable } from '../terminal/printable';
import { formatForwards } from './vm-ports.view';

/**
 * `vm move`: where the VM runs now, how it moved (the guest's pause, the time, the bytes) and its
 * ports on its new node's mesh address (`?` when the node's address could not be read). Every
 * string from the controller printable.
 */
export function formatMoved(moved: MovedVm, wgIp: string | undefined): string {
  const { vm } = moved;
  const how =
    moved.mode === 'live'
      ? `live (guest paused ${moved.pause_ms ?? '?'} ms)`
      : `cold (${vm.state === 'Stopped' ? 'left stopped' : 'started there'})`;
  return [
    `${printable(vm.vm_id)} moved ${how} from node ${printable(moved.from_node_id)} to node ${printable(vm.node_id)} in ${(moved.total_ms / 1000).toFixed(1)} s, ${formatBytes(moved.bytes_sent)} sent`,
    `ports: ${formatForwards(vm, wgIp)}`,
    `node ${printable(moved.from_node_id)} no longer has its disk`,
  ].join('\n');
}

function formatBytes(bytes: number): string {
  if (bytes < 1024 * 1024) return `${bytes} bytes`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
