import { ValidateBy } from 'class-validator';

/**
 * VM_FLEET_ENDPOINT: one controller's URL, or several separated by commas (the controllers of
 * one etcd cluster), tried in turn. Bounded: a fleet of three machines runs three controllers.
 */
export const MAX_FLEET_ENDPOINTS = 8;

/** The longest part of a bad entry an error quotes. */
const MAX_QUOTED_CHARS = 80;

function entriesOf(value: string): string[] {
  return value.split(',').map((entry) => entry.trim());
}

function isHttpUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
}

/**
 * An entry as an error may quote it: without a user:password@ it may carry, a query or a
 * fragment (where a secret could hide), and shortened.
 */
function quotable(entry: string): string {
  const shown = entry
    .replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)?[^/@]*@/, '$1')
    .replace(/[?#].*$/, '');
  return shown.length > MAX_QUOTED_CHARS ? `${shown.slice(0, MAX_QUOTED_CHARS)}...` : shown;
}

/** Why the list is refused, naming the bad entry; undefined when it is fine. */
export function fleetEndpointsProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return 'must be an http(s) URL';
  const entries = entriesOf(value);
  if (entries.length > MAX_FLEET_ENDPOINTS) {
    return `names ${entries.length} controllers; at most ${MAX_FLEET_ENDPOINTS}`;
  }
  const bad = entries.findIndex((entry) => !isHttpUrl(entry));
  if (bad === -1) {
    const unique = new Set(entries.map((entry) => entry.replace(/\/+$/, '')));
    return unique.size === entries.length ? undefined : 'names one controller twice';
  }
  const rule =
    'must be an http(s) URL such as http://<fleet-controller-host>:9203 (several controllers: URLs separated by commas)';
  // One URL is named by the variable alone, as before lists; a list's entry by its place too.
  if (entries.length === 1) return rule;
  const shown = entries[bad] === '' ? 'is empty: it' : `("${quotable(entries[bad])}")`;
  return `entry ${bad + 1} of ${entries.length} ${shown} ${rule}`;
}

/** Validates VM_FLEET_ENDPOINT as a list of http(s) URLs, its error naming the bad entry. */
export function IsFleetEndpoints(): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isFleetEndpoints',
      validator: { validate: (value: unknown) => fleetEndpointsProblem(value) === undefined },
    },
    { message: ({ value }) => `$property ${fleetEndpointsProblem(value) ?? 'is invalid'}` },
  );
}

/** The validated list, each URL without its trailing slashes. */
export function readFleetEndpoints(value: string): string[] {
  return entriesOf(value).map((entry) => entry.replace(/\/+$/, ''));
}

/** An endpoint as logs show it: without any user:password@ it may carry. */
export function endpointForLogs(endpoint: string): string {
  const url = new URL(endpoint);
  url.username = '';
  url.password = '';
  return url.toString().replace(/\/+$/, '');
}
