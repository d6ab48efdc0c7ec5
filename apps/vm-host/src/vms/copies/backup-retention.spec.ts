import { BackupPoint, chainsToRemove, isoWeek, pointsToKeep } from './backup-retention';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Saturday 5 December 2026, 04:00 UTC. */
const NOW = Date.UTC(2026, 11, 5, 4);

/** One point per chain, `ago` before NOW each. */
function points(...ago: number[]): BackupPoint[] {
  return ago.map((ms, index) => ({ chainId: `c${index}`, takenAtMs: NOW - ms }));
}

const kept = (all: BackupPoint[], rules: Parameters<typeof pointsToKeep>[1]): string[] =>
  [...pointsToKeep(all, rules)].map(({ chainId }) => chainId).sort();

describe('backup retention (as vzdump and Proxmox Backup Server prune)', () => {
  it('keeps the newest keep-last, whatever the order they come in', () => {
    const all = points(3 * HOUR, 0, 2 * HOUR, HOUR);
    expect(kept(all, { keepLast: 2, keepDaily: 0, keepWeekly: 0 })).toEqual(['c1', 'c3']);
  });

  it('never keeps none: keep-last is at least 1', () => {
    expect(kept(points(0, HOUR), { keepLast: 0, keepDaily: 0, keepWeekly: 0 })).toEqual(['c0']);
  });

  it("keeps the newest of each day older than keep-last's, a day already covered skipped", () => {
    // Today 04:00 and 02:00, yesterday 22:00 and 10:00, two days ago 12:00, three days ago.
    const all = points(0, 2 * HOUR, 6 * HOUR, 18 * HOUR, DAY + 16 * HOUR, 3 * DAY);
    expect(kept(all, { keepLast: 1, keepDaily: 2, keepWeekly: 0 })).toEqual(['c0', 'c2', 'c4']);
  });

  it('keeps the newest of each ISO week beside them', () => {
    // Saturday now (week 49); last Sunday and the Friday and Thursday before (week 48, weeks
    // begin on Monday); three weeks back (week 46).
    const all = points(0, 6 * DAY, 8 * DAY, 9 * DAY, 21 * DAY);
    expect(kept(all, { keepLast: 1, keepDaily: 0, keepWeekly: 3 })).toEqual(['c0', 'c1', 'c4']);
  });

  it('counts ISO weeks in UTC, the first week of a year holding its first Thursday', () => {
    expect(isoWeek(Date.UTC(2026, 11, 5))).toBe('2026-W49');
    expect(isoWeek(Date.UTC(2026, 11, 7))).toBe('2026-W50');
    expect(isoWeek(Date.UTC(2027, 0, 1))).toBe('2026-W53');
    expect(isoWeek(Date.UTC(2025, 11, 29))).toBe('2026-W01');
  });

  it('removes a chain only once none of its backups is kept', () => {
    const all: BackupPoint[] = [
      { chainId: 'old', takenAtMs: NOW - 2 * DAY },
      { chainId: 'old', takenAtMs: NOW - 2 * DAY + HOUR },
      { chainId: 'yesterday', takenAtMs: NOW - DAY },
      { chainId: 'yesterday', takenAtMs: NOW - DAY + HOUR },
      { chainId: 'today', takenAtMs: NOW - HOUR },
      { chainId: 'today', takenAtMs: NOW },
    ];
    const rules = { keepLast: 3, keepDaily: 0, keepWeekly: 0 };
    // The third newest is yesterday's last: that chain is kept whole.
    expect(chainsToRemove(all, rules)).toEqual(['old']);
    expect(chainsToRemove(all, { ...rules, keepLast: 2 })).toEqual(['old', 'yesterday']);
    expect(chainsToRemove(all, { ...rules, keepLast: 2, keepDaily: 3 })).toEqual([]);
  });
});
