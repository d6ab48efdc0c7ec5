import { ageText, sizeText } from '@app/fleet-domain';
import type { FleetVmBackups } from '../api/fleet-ops-api.client';
import { printable } from '../terminal/printable';
import { formatTable } from '../terminal/table';

/**
 * `vm copies`: every backup of the VM, newest first (where, when, size, full or incremental),
 * then the one under way and the last failure. Every string from the controller made printable.
 */
export function formatVmBackups(backups: FleetVmBackups, nowMs: number, colour: boolean): string {
  const lines: string[] = [];
  const node = printable(backups.node_id);
  if (backups.backups.length === 0) {
    lines.push(`${printable(backups.vm_id)} has no backup on node ${node}`);
  } else {
    lines.push(
      formatTable(
        [
          { header: 'BACKUP' },
          { header: 'KIND' },
          { header: 'TAKEN' },
          { header: 'AGE', align: 'right' },
          { header: 'SIZE', align: 'right' },
          { header: 'WHERE' },
        ],
        backups.backups.map((backup) => [
          printable(backup.backup_id),
          printable(backup.kind),
          printable(backup.taken_at),
          ageText(backup.taken_at, nowMs),
          sizeText(backup.size_bytes),
          `${node}:${printable(backup.path)}`,
        ]),
        colour,
      ),
    );
  }
  if (backups.in_progress_since !== null) {
    lines.push(
      `a backup is under way since ${printable(backups.in_progress_since)} (${ageText(backups.in_progress_since, nowMs)} ago)`,
    );
  }
  if (backups.last_error !== null) {
    lines.push(`the last backup failed: ${printable(backups.last_error)}`);
  }
  return lines.join('\n');
}
