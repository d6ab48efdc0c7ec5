import { networkInterfaces } from 'node:os';
import { readFile } from 'node:fs/promises';

/** Whether /proc/net/route (IPv4) or /proc/net/ipv6_route lists a default route. */
async function hasDefaultRoute(): Promise<boolean> {
  const v4 = await readFile('/proc/net/route', 'utf8').catch(() => '');
  const v6 = await readFile('/proc/net/ipv6_route', 'utf8').catch(() => '');
  return (
    v4.split('\n').some((line) => line.split('\t')[1] === '00000000') ||
    v6.split('\n').some((line) => /^0{32} 00 /.test(line))
  );
}

/**
 * The host interface passt derives its routes from: its own choice (the default route's) when
 * there is one; else, on a node without one (a mesh-only node, a test host), the first interface
 * other than loopback that has an address, which passt needs even for forwards alone.
 */
export async function passtInterface(): Promise<string | undefined> {
  if (await hasDefaultRoute()) return undefined;
  return Object.entries(networkInterfaces()).find(([, addresses]) =>
    (addresses ?? []).some((address) => !address.internal),
  )?.[0];
}
