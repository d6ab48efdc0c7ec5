import type { NodeDrain } from '../api/fleet-ops-api.client';
import { printable } from '../terminal/printable';

/**
 * `node drain`, `undrain` and `drain-status`: whether the node is drained, then one line per
 * VM of its drain (moved where and how, or left and why), then the VMs it still runs. Every
 * string from the controller printable.
 */
export function formatNodeDrain(drain: NodeDrain): string {
  const node = printable(drain.node_id);
  const lines = [
    drain.drained
      ? `node ${node} drained since ${printable(drain.since ?? '?')}: placement passes it over (ppn-fleet node undrain ${node} ends it)`
      : `node ${node} is not drained: placement may choose it`,
  ];
  for (const vm of drain.vms) {
    const id = printable(vm.vm_id);
    const took = `${(vm.took_ms / 1000).toFixed(1)} s`;
    lines.push(
      vm.outcome === 'moved'
        ? `  ${id}: moved ${vm.mode ?? ''} to node ${printable(vm.to_node_id ?? '?')} in ${took}`
        : `  ${id}: ${vm.outcome === 'left' ? 'left on it' : 'move failed, left on it'}: ${printable(vm.message ?? '')}`,
    );
  }
  lines.push(
    drain.remaining_vm_ids.length === 0
      ? `node ${node} runs no VM`
      : `node ${node} still lists ${drain.remaining_vm_ids.map(printable).join(', ')}`,
  );
  return lines.join('\n');
}
