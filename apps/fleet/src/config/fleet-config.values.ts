/** The checks of single settings' values FleetConfig's variables name (endpoints, URLs, host names). */
import { isIP } from 'node:net';

/**
 * VM_FLEET_ETCD_ENDPOINTS as URLs: http or https, a host, no path, credentials or query. Throws
 * naming the entry's position (never its text: it comes from the environment).
 */
export function parseEtcdEndpoints(value: string): string[] {
  const entries = value.split(',').map((entry) => entry.trim());
  if (entries.length > 16) throw new Error('at most 16 endpoints');
  return entries.map((entry, index) => {
    if (!URL.canParse(entry)) throw new Error(`endpoint ${index + 1} is no URL`);
    const url = new URL(entry);
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new Error(`endpoint ${index + 1} is not http:// or https://`);
    if (url.hostname === '' || url.username || url.password || url.search || url.hash)
      throw new Error(`endpoint ${index + 1} must be scheme://host:port only`);
    if (url.pathname !== '/') throw new Error(`endpoint ${index + 1} must have no path`);
    return url.origin;
  });
}

export function isEtcdEndpoints(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    parseEtcdEndpoints(value);
    return true;
  } catch {
    return false;
  }
}

export function isRedisUrl(value: unknown): boolean {
  if (typeof value !== 'string' || !URL.canParse(value)) return false;
  const url = new URL(value);
  return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '';
}

const HOST_NAME =
  /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** A Host header's or VM_FLEET_OPS_HOSTS' name as compared: lower case, no final dot or brackets. */
export function normalHostName(name: string): string {
  return name
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
}

export function isHostNameList(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const names = value.split(',').map(normalHostName);
  return names.length <= 16 && names.every((name) => HOST_NAME.test(name) || isIP(name) !== 0);
}
