import {
  ID_PATTERN,
  IP_LITERAL_MAX_LENGTH,
  MAX_MESH_ROUTES,
  type MeshRoute,
} from '@app/fleet-domain';

/**
 * The routing mesh's table as a heartbeat answer carries it (`mesh_routes`), kept only as
 * routes of the right shape (each then judged by planMesh); none when absent or not a list.
 * At most MAX_MESH_ROUTES are read.
 */
export function meshRoutesOf(value: unknown): MeshRoute[] {
  if (!Array.isArray(value)) return [];
  const routes: MeshRoute[] = [];
  for (const item of value.slice(0, MAX_MESH_ROUTES)) {
    if (typeof item !== 'object' || item === null) continue;
    const { host_port, protocol, vm_id, node_id, wg_ip } = item as Record<string, unknown>;
    if (typeof host_port !== 'number' || !Number.isInteger(host_port)) continue;
    if (protocol !== 'tcp' && protocol !== 'udp') continue;
    if (typeof vm_id !== 'string' || !ID_PATTERN.test(vm_id)) continue;
    if (typeof node_id !== 'string' || !ID_PATTERN.test(node_id)) continue;
    if (typeof wg_ip !== 'string' || wg_ip.length > IP_LITERAL_MAX_LENGTH) continue;
    routes.push({ host_port, protocol, vm_id, node_id, wg_ip });
  }
  return routes;
}
