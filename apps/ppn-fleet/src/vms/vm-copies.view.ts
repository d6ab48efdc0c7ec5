import type { FleetVm } from '../api/fleet-api.client';
import type { VmCopies } from '../api/fleet-ops-api.client';
import { printable } from '../terminal/printable';
import { Cell, formatTable } from '../terminal/table';
import { ageText, sizeText } from '@app/fleet-domain';
import { formatVmBackups } from './vm-backups.view';

/** Whether a listing shows copies at all: a controller or agents before copies show none. */
export function showsCopies(vms: ReadonlyArray<Pick<FleetVm, 'copied_at'>>): boolean {
  return vms.some((vm) => vm.copied_at !== undefined);
}

/**
 * The COPY column: how old the VM's freshest copy on another node is (`42 s`), or `-` (dim)
 * when it has none or is not copied.
 */
export function copyAgeCell(vm: Pick<FleetVm, 'copied_at'>, nowMs: number): Cell {
  if (typeof vm.copied_at !== 'string') return { text: '-', style: 'dim' };
  return ageText(vm.copied_at, nowMs);
}

/** The VM's copy policy in words. */
function describePolicy(policy: VmCopies['policy']): string {
  if (policy === null) return 'copies: none reported by its agent';
  if (policy.count === 0) return 'copies: none (copies 0)';
  return `copies: ${policy.count} on other nodes, every ${policy.every_s} s`;
}

/**
 * `vm copies`: what protects a VM. Its policy; every copy on another node (where, when, size;
 * one sent by another node than the VM's says so); then its backups, newest first, as
 * formatVmBackups shows them, or why they could not be read. Every string made printable.
 */
export function formatVmCopies(copies: VmCopies, nowMs: number, colour: boolean): string {
  const vmId = printable(copies.vm_id);
  const node = printable(copies.node_id);
  const generation =
    copies.generation === undefined
      ? ''
      : ` (generation ${copies.generation}: recovered on another node ${copies.generation === 1 ? 'once' : `${copies.generation} times`})`;
  const lines = [`${vmId} on node ${node}${generation}: ${describePolicy(copies.policy)}`];
  if (copies.copies.length === 0) {
    lines.push(`${vmId} has no copy on another node`);
  } else {
    lines.push(
      formatTable(
        [
          { header: 'COPY ON' },
          { header: 'KIND' },
          { header: 'TAKEN' },
          { header: 'AGE', align: 'right' },
          { header: 'SIZE', align: 'right' },
          { header: 'SENT BY' },
        ],
        copies.copies.map((copy) => [
          printable(copy.node_id),
          // A peer keeps a chain it can boot at once: its file is whole, never a bare increment.
          'copy',
          printable(copy.copied_at),
          ageText(copy.copied_at, nowMs),
          sizeText(copy.size_bytes),
          copy.source_node_id === copies.node_id
            ? printable(copy.source_node_id)
            : {
                text: `${printable(copy.source_node_id)} (not the VM's node now)`,
                style: 'yellow',
              },
        ]),
        colour,
      ),
    );
  }
  lines.push('');
  if (copies.backups === null) {
    lines.push(
      `backups on node ${node} not read: ${printable(copies.backups_unread ?? 'no reason given')}`,
    );
  } else {
    lines.push(formatVmBackups({ ...copies.backups, node_id: copies.node_id }, nowMs, colour));
  }
  return lines.join('\n');
}
