import type { NodeState } from './node-state';
import { MAX_MESH_ROUTES, type MeshRoute } from './wire/mesh-route';
import { MIN_REQUESTED_HOST_PORT, portName } from './wire/published-port';

/** How many of a duplicated port's holders its warning names. */
const MAX_NAMED_HOLDERS = 4;

/** A port two VMs publish at once: left out of the mesh (nobody could say which one it reaches). */
export interface MeshDuplicate {
  /** `8080/tcp` */
  port: string;
  /** `vm <id> on node <id>`, the first few holders (then `<n> more`). */
  holders: string[];
}

/** The fleet's published ports, as the routing mesh forwards them (docs/vms.md "Reaching a service"). */
export interface MeshTable {
  /** One per published port, sorted by protocol then port. */
  routes: MeshRoute[];
  duplicates: MeshDuplicate[];
}

/**
 * Every published port of every VM the given (live) nodes list, stopped ones too (a stopped VM
 * keeps its ports, and the mesh keeps them unique): SSH forwards and `ports` alike, 1024 and up.
 * A port that two VMs publish is left out and named in `duplicates`.
 */
export function meshTable(
  nodes: readonly Pick<NodeState, 'node_id' | 'wg_ip' | 'vms'>[],
): MeshTable {
  // Keyed by port, then VM id: one pass, whatever the fleet's size (it is built every second).
  const byPort = new Map<string, Map<string, MeshRoute>>();
  for (const node of nodes) {
    for (const vm of node.vms) {
      for (const port of vm.host_ports ?? []) {
        if (port.host_port < MIN_REQUESTED_HOST_PORT || port.host_port > 65535) continue;
        const name = portName(port.host_port, port.protocol);
        let holders = byPort.get(name);
        if (!holders) byPort.set(name, (holders = new Map<string, MeshRoute>()));
        if (holders.has(vm.vm_id)) continue;
        holders.set(vm.vm_id, {
          host_port: port.host_port,
          protocol: port.protocol,
          vm_id: vm.vm_id,
          node_id: node.node_id,
          wg_ip: node.wg_ip,
        });
      }
    }
  }
  const routes: MeshRoute[] = [];
  const duplicates: MeshDuplicate[] = [];
  for (const [port, holders] of byPort) {
    if (holders.size === 1) {
      routes.push(holders.values().next().value as MeshRoute);
      continue;
    }
    // Named in a warning: a few holders are enough to act on, the rest counted.
    const named: string[] = [];
    for (const { vm_id, node_id } of holders.values()) {
      if (named.length === MAX_NAMED_HOLDERS) break;
      named.push(`vm ${vm_id} on node ${node_id}`);
    }
    named.sort();
    if (holders.size > named.length) named.push(`${holders.size - named.length} more`);
    duplicates.push({ port, holders: named });
  }
  routes.sort(byProtocolThenPort);
  duplicates.sort((a, b) => (a.port < b.port ? -1 : a.port > b.port ? 1 : 0));
  return { routes, duplicates };
}

/**
 * What one node is told: the routes of the other nodes' VMs, at most `max` (the lowest ports
 * first; `left_off` counts the rest).
 */
export function meshRoutesFor(
  table: MeshTable,
  nodeId: string,
  max: number = MAX_MESH_ROUTES,
): { routes: MeshRoute[]; left_off: number } {
  const others = table.routes.filter((route) => route.node_id !== nodeId);
  return { routes: others.slice(0, max), left_off: Math.max(0, others.length - max) };
}

function byProtocolThenPort(a: MeshRoute, b: MeshRoute): number {
  if (a.protocol !== b.protocol) return a.protocol === 'tcp' ? -1 : 1;
  return a.host_port - b.host_port;
}
