import {
  ID_PATTERN,
  MAX_MESH_ROUTES,
  MIN_REQUESTED_HOST_PORT,
  type MeshRoute,
  effectiveAddress,
  isLinkLocalAddress,
  isLoopbackAddress,
  isUnicastAddress,
} from '@app/fleet-domain';

/** Where one port's connections go: a VM's node, at its mesh address and the same port. */
export interface MeshTarget {
  address: string;
  port: number;
  vm_id: string;
  node_id: string;
}

/** What this node is, as the plan judges routes against it. */
export interface MeshSelf {
  nodeId: string;
  wgIp: string;
  /** Every address of this host's interfaces (os.networkInterfaces()): never a target. */
  hostAddresses?: readonly string[];
  /** TCP host ports this node's own VMs hold (running or not): never the mesh's. */
  ownPorts: ReadonlySet<number>;
  /** The fleet daemons' ports and VM_RESERVED_HOST_PORTS: never the mesh's. */
  keptPorts: ReadonlySet<number>;
}

export interface MeshPlan {
  /** TCP port on this node's mesh address to the VM it reaches. */
  listen: Map<number, MeshTarget>;
  /** Routes not followed, each with why (in the agent's words, for its log). */
  refused: Array<{ route: MeshRoute; why: string }>;
}

/**
 * The listeners a table asks of this node, each route judged: the mesh forwards only to another
 * fleet node's mesh address at the VM's published host port: a private address a WireGuard
 * mesh uses (MESH_RANGES), never any address of this host, loopback (unless this node's own
 * address is: a fleet on one machine), link-local, or anything that is not a unicast address;
 * so a token-holding node cannot make it a relay to the Internet or to this host's services.
 * Never on a port this node's VMs or daemons use. UDP is not forwarded
 * (left out, not refused). At most MAX_MESH_ROUTES routes are read.
 */
export function planMesh(routes: readonly MeshRoute[], self: MeshSelf): MeshPlan {
  const listen = new Map<number, MeshTarget>();
  const refused: MeshPlan['refused'] = [];
  for (const route of routes.slice(0, MAX_MESH_ROUTES)) {
    if (route.protocol !== 'tcp') continue;
    if (self.ownPorts.has(route.host_port)) continue;
    const why =
      refusal(route, self) ??
      (listen.has(route.host_port) ? 'its port is listed twice' : undefined);
    if (why !== undefined) {
      refused.push({ route, why });
      continue;
    }
    listen.set(route.host_port, {
      address: route.wg_ip,
      port: route.host_port,
      vm_id: route.vm_id,
      node_id: route.node_id,
    });
  }
  return { listen, refused };
}

function refusal(route: MeshRoute, self: MeshSelf): string | undefined {
  const port = route.host_port;
  if (!Number.isInteger(port) || port < MIN_REQUESTED_HOST_PORT || port > 65535) {
    return `port ${String(port)} is not one from ${MIN_REQUESTED_HOST_PORT} to 65535`;
  }
  if (self.keptPorts.has(port)) return `port ${port} is a fleet daemon's or reserved here`;
  if (!ID_PATTERN.test(route.node_id) || !ID_PATTERN.test(route.vm_id)) return 'a bad id';
  if (route.node_id === self.nodeId) return 'it names this node';
  const address = route.wg_ip;
  if (!isUnicastAddress(address) || isLinkLocalAddress(address)) {
    return `${address} is not a unicast mesh address`;
  }
  if (isLoopbackAddress(address) && !isLoopbackAddress(self.wgIp)) {
    return `${address} is loopback`;
  }
  if (sameAddress(address, self.wgIp)) return `${address} is this node's own address`;
  if ((self.hostAddresses ?? []).some((own) => sameAddress(address, own))) {
    return `${address} is an address of this host`;
  }
  if (!isLoopbackAddress(address) && !isMeshAddress(address)) {
    return `${address} is not a private mesh address (${MESH_RANGES})`;
  }
  return undefined;
}

/** The ranges a WireGuard mesh's addresses come from (private, CGNAT, ULA). */
const MESH_RANGES = '10/8, 172.16/12, 192.168/16, 100.64/10, fd00::/8';

function isMeshAddress(text: string): boolean {
  const address = effectiveAddress(text);
  if (!address) return false;
  const [a, b] = address.bytes;
  if (address.family === 6) return a === 0xfd;
  return (
    a === 10 ||
    (a === 172 && (b & 0xf0) === 16) ||
    (a === 192 && b === 168) ||
    (a === 100 && (b & 0xc0) === 64)
  );
}

function sameAddress(a: string, b: string): boolean {
  const one = effectiveAddress(a);
  const other = effectiveAddress(b);
  return !!one && !!other && one.bytes.join('.') === other.bytes.join('.');
}
