import { Injectable } from '@nestjs/common';
import { type HostPort, type MeshRoute, type PortProtocol, portName } from '@app/fleet-domain';

/** Where the mesh forwarded a port it let go of: the VM's node, at its mesh address. */
export interface ReleasedRoute {
  address: string;
  vmId: string;
  nodeId: string;
}

/**
 * What lets go of a port the routing mesh listens on, so a VM of this node can take it; where
 * it forwarded that port (a route judged by the mesh), if it listened on it.
 */
export type MeshPortRelease = (
  port: number,
  protocol: PortProtocol,
) => Promise<ReleasedRoute | undefined>;

/** What forwards a moved-out VM's ports to the node it moved to, until the table says so itself. */
export type MeshHandOff = (vmId: string, routes: readonly MeshRoute[]) => Promise<void>;

/**
 * What host port choices need of the routing mesh (`mesh/`, which sets it): the fleet's
 * published ports on other nodes, so a port this node picks or keeps is unique fleet-wide, and
 * the mesh's listener on a port a VM moved or restored here takes back. Without a mesh (a test,
 * a controller before it) it knows of none.
 */
@Injectable()
export class MeshPorts {
  private routes = new Map<string, MeshRoute>();
  private release?: MeshPortRelease;
  /** The last route let go of, by port: a VM moved in live reaches its old node by it meanwhile. */
  private released = new Map<string, ReleasedRoute>();
  private handOff?: MeshHandOff;

  /** The routes the last heartbeat answer carried (none: an empty list). */
  learn(routes: readonly MeshRoute[]): void {
    this.routes = new Map(
      routes.map((route) => [portName(route.host_port, route.protocol), route]),
    );
  }

  /** Set once by the routing mesh. */
  releaseWith(release: MeshPortRelease): void {
    this.release = release;
  }

  /** Set once by the routing mesh. */
  handOffWith(handOff: MeshHandOff): void {
    this.handOff = handOff;
  }

  /**
   * A VM of this node moved live to another node, its QEMU here stopped: the mesh forwards its
   * TCP ports at this node's address to that node at once, not only once the controller's table
   * says where it runs (a heartbeat or two later). Nothing without a mesh.
   */
  async movedOut(
    vmId: string,
    ports: readonly HostPort[],
    to: { nodeId: string; wgIp: string },
  ): Promise<void> {
    const routes = ports.map((port): MeshRoute => ({
      host_port: port.host_port,
      protocol: port.protocol,
      vm_id: vmId,
      node_id: to.nodeId,
      wg_ip: to.wgIp,
    }));
    await this.handOff?.(vmId, routes);
  }

  /** The VM of another node that publishes this port, as `vm <id> on node <id>`; undefined: none. */
  publishedElsewhere(
    port: number,
    protocol: PortProtocol,
    exceptVmId?: string,
  ): string | undefined {
    const route = this.routes.get(portName(port, protocol));
    if (!route || route.vm_id === exceptVmId) return undefined;
    return `vm ${route.vm_id} on node ${route.node_id}`;
  }

  /** Every port another node's VM (but `exceptVmId`) publishes, as `8080/tcp` with its holder. */
  allPublishedElsewhere(exceptVmId?: string): Array<[string, string]> {
    const routes = [...this.routes].filter(([, route]) => route.vm_id !== exceptVmId);
    return routes.map(([name, route]) => [
      name,
      `published by vm ${route.vm_id} on node ${route.node_id} (the routing mesh)`,
    ]);
  }

  /** The mesh stops listening on the port (for a VM of this node), awaited; nothing without a mesh. */
  async take(port: number, protocol: PortProtocol): Promise<void> {
    const route = await this.release?.(port, protocol);
    const name = portName(port, protocol);
    if (route) this.released.set(name, route);
    else this.released.delete(name);
  }

  /**
   * Where the mesh forwarded `port` for `vmId` when it let it go (`take`): its node before it
   * moved here; undefined: the mesh did not forward it to that VM.
   */
  releasedFor(port: number, protocol: PortProtocol, vmId: string): ReleasedRoute | undefined {
    const route = this.released.get(portName(port, protocol));
    return route?.vmId === vmId ? route : undefined;
  }
}
