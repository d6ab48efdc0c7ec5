import type { NodeState } from './node-state';
import { MAX_MESH_ROUTES, type MeshRoute } from './wire/mesh-route';
import { MIN_REQUESTED_HOST_PORT, portName } from './wire/published-port';

/** A port two VMs publish at once: left out of the mesh (nobody could say which one it reaches). */
export interface MeshDuplicate {
  /** `8080/tcp` */
  port: string;
  /** `vm <id> on node <id>`, each holder. */
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
  const byPort = new Map<string, MeshRoute[]>();
  for (const node of nodes) {
    for (const vm of node.vms) {
      for (const port of vm.host_ports ?? []) {
        if (port.host_port < MIN_REQUESTED_HOST_PORT || port.host_port > 65535) continue;
        const route: MeshRoute = {
          host_port: port.host_port,
          protocol: port.protocol,
          vm_id: vm.vm_id,
          node_id: node.node_id,
          wg_ip: node.wg_ip,
        };
        const name = portName(port.host_port, port.protocol);
        const same = byPort.get(name);
        if (!same) byPort.set(name, [route]);
        else if (!same.some((other) => other.vm_id === vm.vm_id)) same.push(route);
      }
    }
  }
  const routes: MeshRoute[] = [];
  const duplicates: MeshDuplicate[] = [];
  for (const [port, holders] of byPort) {
    if (holders.length === 1) routes.push(holders[0]);
    else {
      duplicates.push({
        port,
        holders: holders.map(({ vm_id, node_id }) => `vm ${vm_id} on node ${node_id}`).sort(),
      });
    }
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
