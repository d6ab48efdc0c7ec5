/** How many backups a VM keeps, as vzdump's and Proxmox Backup Server's prune options. */
export interface RetentionRules {
  /** The newest this many. At least 1: the newest backup is never removed. */
  keepLast: number;
  /** The newest of each of this many UTC days, older than those kept before. */
  keepDaily: number;
  /** The newest of each of this many ISO weeks (UTC), older than those kept before. */
  keepWeekly: number;
}

/** One backup (a point in time of a chain), by when it was taken. */
export interface BackupPoint {
  chainId: string;
  takenAtMs: number;
}

const DAY_MS = 86_400_000;

function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** The ISO 8601 week (`2026-W49`), counted in UTC. */
export function isoWeek(ms: number): string {
  const date = new Date(Math.floor(ms / DAY_MS) * DAY_MS);
  const weekday = (date.getUTCDay() + 6) % 7; // Monday 0
  const thursday = new Date(date.getTime() + (3 - weekday) * DAY_MS);
  const yearStart = Date.UTC(thursday.getUTCFullYear(), 0, 1);
  const week = 1 + Math.floor((thursday.getTime() - yearStart) / (7 * DAY_MS));
  return `${thursday.getUTCFullYear()}-W${String(week).padStart(2, '0')}`;
}

/**
 * The points kept, as Proxmox Backup Server prunes: the rules in order, each over the points
 * the ones before left; a period (day, week) that already has a kept point counts as covered.
 */
export function pointsToKeep(
  points: readonly BackupPoint[],
  rules: RetentionRules,
): Set<BackupPoint> {
  const newestFirst = [...points].sort((a, b) => b.takenAtMs - a.takenAtMs);
  const kept = new Set<BackupPoint>();
  const select = (count: number, period: (point: BackupPoint) => string): void => {
    const covered = new Set([...kept].map(period));
    const chosen = new Set<string>();
    for (const point of newestFirst) {
      if (kept.has(point)) continue;
      const id = period(point);
      if (covered.has(id) || chosen.has(id)) continue;
      if (chosen.size >= count) break;
      chosen.add(id);
      kept.add(point);
    }
  };
  select(Math.max(1, rules.keepLast), (point) => `${point.chainId}@${point.takenAtMs}`);
  select(rules.keepDaily, (point) => utcDay(point.takenAtMs));
  select(rules.keepWeekly, (point) => isoWeek(point.takenAtMs));
  return kept;
}

/**
 * The chains none of whose points is kept: a chain's later files need its earlier ones, so a
 * chain goes whole or not at all (more may be kept than the rules say, never less).
 */
export function chainsToRemove(points: readonly BackupPoint[], rules: RetentionRules): string[] {
  const kept = new Set([...pointsToKeep(points, rules)].map(({ chainId }) => chainId));
  return [...new Set(points.map(({ chainId }) => chainId))].filter((id) => !kept.has(id)).sort();
}
