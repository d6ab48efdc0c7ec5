import type { FleetVmBackups } from '../api/fleet-ops-api.client';
import { printable } from '../terminal/printable';
import { formatTable } from '../terminal/table';

/** Bytes as the largest whole unit that keeps one decimal: `512 B`, `3.2 MiB`, `1.4 GiB`. */
export function formatSize(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** How long ago an RFC 3339 time was, roughly: `42 s`, `17 min`, `5 h`, `3 d`. */
export function formatAge(time: string, nowMs: number): string {
  const at = Date.parse(time);
  if (Number.isNaN(at)) return '?';
  const s = Math.max(0, Math.floor((nowMs - at) / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7_200) return `${Math.floor(s / 60)} min`;
  if (s < 172_800) return `${Math.floor(s / 3_600)} h`;
  return `${Math.floor(s / 86_400)} d`;
}

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
          formatAge(backup.taken_at, nowMs),
          formatSize(backup.size_bytes),
          `${node}:${printable(backup.path)}`,
        ]),
        colour,
      ),
    );
  }
  if (backups.in_progress_since !== null) {
    lines.push(
      `a backup is under way since ${printable(backups.in_progress_since)} (${formatAge(backups.in_progress_since, nowMs)} ago)`,
    );
  }
  if (backups.last_error !== null) {
    lines.push(`the last backup failed: ${printable(backups.last_error)}`);
  }
  return lines.join('\n');
}
