import { rfc3339ToEpochNanos } from './rfc3339';

/**
 * Sizes and ages as the web console and the CLI show them (one wording for both). Pure: the
 * caller gives the time it is.
 */

/** Bytes as the largest whole unit that keeps one decimal: `512 B`, `3.2 MiB`, `1.4 GiB`. */
export function sizeText(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** How long before `nowMs` an RFC 3339 time was, roughly: `42 s`, `17 min`, `5 h`, `3 d`; `?` unreadable. */
export function ageText(time: string, nowMs: number): string {
  const nanos = rfc3339ToEpochNanos(time);
  if (nanos === null) return '?';
  const s = Math.max(0, Math.floor((nowMs - Number(nanos / 1_000_000n)) / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7_200) return `${Math.floor(s / 60)} min`;
  if (s < 172_800) return `${Math.floor(s / 3_600)} h`;
  return `${Math.floor(s / 86_400)} d`;
}
