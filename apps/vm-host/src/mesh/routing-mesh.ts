import { networkInterfaces } from 'node:os';
import { Injectable, Logger, OnApplicationShutdown, Optional } from '@nestjs/common';
import { Clock } from '@app/daemon';
import type { HostPort, MeshRoute, PortProtocol } from '@app/fleet-domain';
import { VmHostConfig } from '../config/vm-host.config';
import { HostMetrics } from '../metrics/host-metrics.service';
import { VmSidecars } from '../vms/files/vm-sidecars';
import { MeshPorts, ReleasedRoute } from '../vms/ports/mesh-ports';
import { fleetDaemonPortsOf } from '../vms/ports/host-ports';
import { MeshBudget, MeshListener, MeshListenerLimits, MESH_LIMITS } from './mesh-listener';
import { MeshTarget, planMesh } from './mesh-plan';

/**
 * A port given back to a VM of this node (moved or restored here) stays the VM's this long
 * even before a heartbeat lists it, so the mesh does not take it again meanwhile.
 */
const TAKEN_BACK_MS = 120_000;

/** This node's VMs as the heartbeat lists them: their host ports are never the mesh's. */
export interface OwnVm {
  host_ports?: readonly HostPort[];
}

/**
 * The routing mesh on this node (docs/vms.md "Reaching a service"): from each heartbeat's
 * answer, a listener at VM_WG_IP on each published TCP port of another node's VM, forwarding to
 * that node. Listeners are opened and closed as the table changes; a port it cannot bind (held
 * by another process) is logged once, naming node and port, and tried again at each answer.
 * With VM_ROUTING_MESH off it listens on nothing, but host ports stay unique (MeshPorts).
 */
@Injectable()
export class RoutingMesh implements OnApplicationShutdown {
  private readonly logger = new Logger('RoutingMesh');
  private readonly listeners = new Map<number, MeshListener>();
  /** Ports a VM of this node took back, until when (Clock.now). */
  private readonly takenBack = new Map<number, number>();
  /** Ports whose bind failed, with why: warned once until they bind or leave the table. */
  private readonly failing = new Map<number, string>();
  /** Routes refused, by a key of the route: warned once while the table carries them. */
  private refusedWarned = new Set<string>();
  /** learn and take run one at a time. */
  private turn: Promise<unknown> = Promise.resolve();
  private stopped = false;
  limits: MeshListenerLimits = MESH_LIMITS;
  /** Every port's connections together (MESH_MAX_CONNECTIONS); a test sets a smaller one. */
  budget = new MeshBudget();
  /** This host's interface addresses, read at each table (a test gives its own). */
  hostAddresses: () => string[] = () =>
    Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((one) => one.address));

  constructor(
    private readonly config: VmHostConfig,
    private readonly ports: MeshPorts,
    private readonly clock: Clock,
    /**
     * This node's VMs as their files say (forwards fixed at admission): a VM moved in lists no
     * host_ports while Provisioning, yet its QEMU holds them.
     */
    @Optional() private readonly sidecars?: VmSidecars,
    @Optional() private readonly metrics?: HostMetrics,
  ) {
    ports.releaseWith((port, protocol) => this.takeBack(port, protocol));
  }

  /** TCP ports listened on now, each with where it forwards. */
  listening(): Map<number, MeshTarget> {
    return new Map([...this.listeners].map(([port, listener]) => [port, listener.target]));
  }

  /** The table of an accepted heartbeat answer (none: empty), beside this node's own VMs. */
  learn(routes: readonly MeshRoute[], own: readonly OwnVm[]): Promise<void> {
    this.ports.learn(routes);
    // Never the heartbeat's failure: the mesh is tried again at the next answer.
    return this.inTurn(() => this.apply(routes, own)).catch((error: Error) =>
      this.logger.warn(`node ${this.config.nodeId}: routing mesh not updated: ${error.message}`),
    );
  }

  onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    return this.inTurn(async () => {
      await Promise.all([...this.listeners.values()].map((listener) => listener.close()));
      this.listeners.clear();
    });
  }

  private async apply(routes: readonly MeshRoute[], own: readonly OwnVm[]): Promise<void> {
    if (this.stopped) return;
    const ownPorts = new Set<number>();
    const files = (await this.sidecars?.all().catch(() => [])) ?? [];
    for (const vm of [...own, ...files.map((file) => ({ host_ports: file.forwards }))]) {
      for (const port of vm.host_ports ?? [])
        if (port.protocol === 'tcp') ownPorts.add(port.host_port);
    }
    const now = this.clock.now();
    for (const [port, until] of this.takenBack) {
      if (until <= now || ownPorts.has(port)) this.takenBack.delete(port);
      else ownPorts.add(port);
    }
    const kept = new Set([
      ...fleetDaemonPortsOf(this.config),
      ...(this.config.reservedHostPorts ?? []),
    ]);
    const plan = planMesh(this.config.routingMesh ? routes : [], {
      nodeId: this.config.nodeId,
      wgIp: this.config.wgIp,
      hostAddresses: this.hostAddresses(),
      ownPorts,
      keptPorts: kept,
    });
    this.warnRefused(plan.refused);
    let opened = 0;
    let closed = 0;
    for (const [port, listener] of this.listeners) {
      if (plan.listen.has(port)) continue;
      this.listeners.delete(port);
      await listener.close();
      closed += 1;
    }
    for (const port of this.failing.keys()) if (!plan.listen.has(port)) this.failing.delete(port);
    for (const [port, target] of plan.listen) {
      const listener = this.listeners.get(port);
      if (listener) {
        listener.target = target;
        continue;
      }
      if (await this.open(port, target)) opened += 1;
    }
    this.metrics?.observeMeshPorts(this.listeners.size, this.failing.size);
    if (opened + closed > 0) {
      this.logger.log(
        `node ${this.config.nodeId}: routing mesh listens on ${this.listeners.size} port(s) of other nodes' VMs at ${this.config.wgIp} (${opened} opened, ${closed} closed)`,
      );
    }
  }

  private async open(port: number, target: MeshTarget): Promise<boolean> {
    const listener = new MeshListener(port, target, this.limits, this.budget);
    try {
      await listener.listen(this.config.wgIp);
    } catch (error) {
      const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      if (this.failing.get(port) !== why) {
        this.logger.warn(
          `node ${this.config.nodeId}: routing mesh cannot listen on ${this.config.wgIp}:${port}/tcp for vm ${target.vm_id} on node ${target.node_id} (${why === 'EADDRINUSE' ? 'another process holds it; list it in VM_RESERVED_HOST_PORTS to keep the fleet off it' : why}); that service is not reached through this node, tried again at each heartbeat`,
        );
      }
      this.failing.set(port, why);
      return false;
    }
    if (this.failing.delete(port)) {
      this.logger.log(
        `node ${this.config.nodeId}: routing mesh listens on ${this.config.wgIp}:${port}/tcp now`,
      );
    }
    this.listeners.set(port, listener);
    return true;
  }

  /**
   * A VM of this node takes the port: the mesh lets it go, and leaves it alone meanwhile.
   * Where it forwarded it (a route it had judged), if it listened on it.
   */
  private takeBack(port: number, protocol: PortProtocol): Promise<ReleasedRoute | undefined> {
    if (protocol !== 'tcp') return Promise.resolve(undefined);
    return this.inTurn(async () => {
      this.takenBack.set(port, this.clock.now() + TAKEN_BACK_MS);
      const listener = this.listeners.get(port);
      if (!listener) return undefined;
      this.listeners.delete(port);
      await listener.close();
      const { address, vm_id: vmId, node_id: nodeId } = listener.target;
      this.logger.log(
        `node ${this.config.nodeId}: routing mesh let ${this.config.wgIp}:${port}/tcp go to a VM of this node (was forwarded to vm ${vmId} on node ${nodeId})`,
      );
      return { address, vmId, nodeId };
    });
  }

  private warnRefused(refused: ReturnType<typeof planMesh>['refused']): void {
    const now = new Set<string>();
    for (const { route, why } of refused) {
      const key = `${route.host_port}/${route.node_id}/${route.wg_ip}`;
      now.add(key);
      if (this.refusedWarned.has(key)) continue;
      this.logger.warn(
        `node ${this.config.nodeId}: routing mesh route refused: port ${route.host_port} of vm ${route.vm_id} on node ${route.node_id} (${route.wg_ip}): ${why}`,
      );
    }
    this.refusedWarned = now;
  }

  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const next = this.turn.then(work, work);
    this.turn = next.catch(() => undefined);
    return next;
  }
}
