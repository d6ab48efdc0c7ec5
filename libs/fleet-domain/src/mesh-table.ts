import { effectiveAddress, isLoopbackBytes } from '@app/api-basics';
import type { NodeState } from './node-state';
import { MAX_MESH_ROUTES, type MeshRoute } from './wire/mesh-route';
import { MIN_REQUESTED_HOST_PORT, portName } from './wire/published-port';

/** How many of a duplicated port's holders its warning names. */
const MAX_NAMED_HOLDERS = 4;
/**
 * Routes one node adds to the table at most (its lowest ports first): so a node cannot fill
 * the MAX_MESH_ROUTES an answer carries and push every other node's routes out.
 */
export const MAX_MESH_ROUTES_PER_NODE = 64;

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
  /**
   * A mesh address two live nodes claim (one may be claiming the other's): neither node's
   * routes are in the table. A loopback address is not one (a fleet on one machine shares it,
   * and agents off loopback refuse it anyway).
   */
  shared_addresses: Array<{ wg_ip: string; node_ids: string[] }>;
  /** A node publishing more than MAX_MESH_ROUTES_PER_NODE ports: the rest left out. */
  crowded: Array<{ node_id: string; left_off: number }>;
}

/**
 * Every published port of every VM the given (live) nodes list, stopped ones too (a stopped VM
 * keeps its ports, and the mesh keeps them unique): SSH forwards and `ports` alike, 1024 and up.
 * A port that two VMs publish is left out and named in `duplicates`; so are the routes of nodes
 * sharing a mesh address (`shared_addresses`) and a node's ports past MAX_MESH_ROUTES_PER_NODE
 * (`crowded`).
 */
export function meshTable(
  nodes: readonly Pick<NodeState, 'node_id' | 'wg_ip' | 'vms'>[],
  perNode: number = MAX_MESH_ROUTES_PER_NODE,
): MeshTable {
  const claims = new Map<string, { wg_ip: string; node_ids: string[] }>();
  for (const node of nodes) {
    const key = addressKey(node.wg_ip);
    if (key === undefined) continue;
    const claim = claims.get(key);
    if (claim) claim.node_ids.push(node.node_id);
    else claims.set(key, { wg_ip: node.wg_ip, node_ids: [node.node_id] });
  }
  const shared = [...claims.values()].filter((claim) => claim.node_ids.length > 1);
  const sharing = new Set(shared.flatMap((claim) => claim.node_ids));
  const crowded: MeshTable['crowded'] = [];
  // Keyed by port (portKey), then VM id: one pass, whatever the fleet's size. A port's one
  // holder is kept bare; a Map only for a port two VMs publish.
  const byPort = new Map<number, MeshRoute | Map<string, MeshRoute>>();
  for (const node of nodes) {
    if (sharing.has(node.node_id)) continue;
    const listed = routesOf(node);
    const kept =
      listed.length > perNode ? withinLimit(node.node_id, listed, perNode, crowded) : listed;
    for (const route of kept) {
      const key = portKey(route);
      const holders = byPort.get(key);
      if (holders === undefined) {
        byPort.set(key, route);
      } else if (holders instanceof Map) {
        if (!holders.has(route.vm_id)) holders.set(route.vm_id, route);
      } else if (holders.vm_id !== route.vm_id) {
        byPort.set(
          key,
          new Map([
            [holders.vm_id, holders],
            [route.vm_id, route],
          ]),
        );
      }
    }
  }
  const routes: MeshRoute[] = [];
  const duplicates: MeshDuplicate[] = [];
  for (const holders of byPort.values()) {
    if (!(holders instanceof Map)) {
      routes.push(holders);
      continue;
    }
    // Named in a warning: a few holders are enough to act on, the rest counted.
    const named: string[] = [];
    const first = holders.values().next().value as MeshRoute;
    const port = portName(first.host_port, first.protocol);
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
  return { routes, duplicates, shared_addresses: shared, crowded };
}

/**
 * One key per address named, in any spelling (`::ffff:10.8.0.1` is 10.8.0.1); undefined for a
 * loopback address (not a claim: a fleet on one machine shares it).
 */
function addressKey(text: string): string | undefined {
  const address = effectiveAddress(text);
  if (!address) return text;
  if (isLoopbackBytes(address)) return undefined;
  // Dotted IPv4 that parsed is written one way only (no leading zero): the text is the key.
  return address.family === 4 && !text.includes(':') ? text : address.bytes.join('.');
}

/** The port a route publishes as one number: TCP ports as they are, UDP ports above them. */
function portKey({ host_port, protocol }: MeshRoute): number {
  return protocol === 'udp' ? 65536 + host_port : host_port;
}

/**
 * A node's routes: one per VM and published port, 1024 and up, in the order listed; a port a
 * VM lists twice comes twice (the table keeps one route per port and VM).
 */
function routesOf(node: Pick<NodeState, 'node_id' | 'wg_ip' | 'vms'>): MeshRoute[] {
  const routes: MeshRoute[] = [];
  for (const vm of node.vms) {
    if (!vm.host_ports) continue;
    for (const port of vm.host_ports) {
      if (port.host_port < MIN_REQUESTED_HOST_PORT || port.host_port > 65535) continue;
      routes.push({
        host_port: port.host_port,
        protocol: port.protocol,
        vm_id: vm.vm_id,
        node_id: node.node_id,
        wg_ip: node.wg_ip,
      });
    }
  }
  return routes;
}

/**
 * A node's `perNode` lowest distinct routes when it lists more; the rest counted in `crowded`.
 * Routes repeated count once, so a VM listing a port twice cannot crowd the node's others out.
 */
function withinLimit(
  nodeId: string,
  listed: MeshRoute[],
  perNode: number,
  crowded: MeshTable['crowded'],
): MeshRoute[] {
  const distinct = new Map<string, MeshRoute>();
  for (const route of listed) distinct.set(`${portKey(route)} ${route.vm_id}`, route);
  if (distinct.size <= perNode) return [...distinct.values()];
  crowded.push({ node_id: nodeId, left_off: distinct.size - perNode });
  return [...distinct.values()].sort(byProtocolThenPort).slice(0, perNode);
}

/**
 * Whether two states of one node give the routing mesh the same routes: the same address and the
 * same VMs, in the same order, publishing the same ports. A store that knows its every write
 * (the in-memory one) spares the table a rebuild this way (routesGeneration): it must compare
 * every field of a node that meshTable reads.
 */
export function routesAlike(
  a: Pick<NodeState, 'wg_ip' | 'vms'>,
  b: Pick<NodeState, 'wg_ip' | 'vms'>,
): boolean {
  if (a.wg_ip !== b.wg_ip || a.vms.length !== b.vms.length) return false;
  for (let index = 0; index < a.vms.length; index++) {
    const before = a.vms[index];
    const after = b.vms[index];
    if (before.vm_id !== after.vm_id) return false;
    const ports = before.host_ports ?? [];
    const others = after.host_ports ?? [];
    if (ports.length !== others.length) return false;
    for (let at = 0; at < ports.length; at++) {
      if (ports[at].host_port !== others[at].host_port) return false;
      if (ports[at].protocol !== others[at].protocol) return false;
    }
  }
  return true;
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
