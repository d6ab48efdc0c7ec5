import type { NodeRecord } from '../api/fleet-api.client';
import { printable } from '../terminal/printable';
import { Cell, formatFields, formatTable } from '../terminal/table';

/** How long ago `then` was, as of `now` (both RFC 3339), in whole seconds, or minutes/hours. */
export function age(then: string, now: string): string {
  const seconds = Math.max(0, Math.round((Date.parse(now) - Date.parse(then)) / 1000));
  if (Number.isNaN(seconds)) return '?';
  if (seconds < 120) return `${seconds} s ago`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)} min ago`;
  return `${Math.floor(seconds / 3600)} h ago`;
}

function yesNo(value: boolean): Cell {
  return value ? 'yes' : { text: 'no', style: 'dim' };
}

/**
 * GET /v1/nodes as a table; `now` is the time the ages are measured against. Every string of the
 * answer is shown printable (here and in every view): it must not drive the terminal.
 */
export function formatNodes(nodes: NodeRecord[], now: string, colour: boolean): string {
  if (nodes.length === 0) return 'no live nodes';
  return formatTable(
    [
      { header: 'NODE' },
      { header: 'HOSTNAME' },
      { header: 'WG IP' },
      { header: 'RAM FREE', align: 'right' },
      { header: 'VMS', align: 'right' },
      { header: 'KVM' },
      { header: 'RESERVED' },
      { header: 'LAST BEAT' },
    ],
    nodes.map((node) => [
      { text: printable(node.node_id), style: 'cyan' },
      printable(node.hostname),
      printable(node.wg_ip),
      `${node.ram_available_mb} MB`,
      String(node.vm_count),
      yesNo(node.kvm_available),
      node.reserved ? { text: 'yes', style: 'yellow' } : { text: 'no', style: 'dim' },
      age(node.last_heartbeat, now),
    ]),
    colour,
  );
}

/** GET /v1/nodes/{node_id} as one field a line. */
export function formatNode(node: NodeRecord, now: string, colour: boolean): string {
  return formatFields(
    [
      ['node', { text: printable(node.node_id), style: 'cyan' }],
      ['hostname', printable(node.hostname)],
      ['WireGuard IP', printable(node.wg_ip)],
      ['RAM free', `${node.ram_available_mb} MB`],
      ['VMs', String(node.vm_count)],
      ['KVM', yesNo(node.kvm_available)],
      ['reserved', node.reserved ? { text: 'yes', style: 'yellow' } : 'no'],
      ['last heartbeat', `${printable(node.last_heartbeat)} (${age(node.last_heartbeat, now)})`],
    ],
    colour,
  );
}
