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
  vm_id?: string;
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
  /**
   * VMs of this node moved live to another node, with their routes there, for TAKEN_BACK_MS
   * (Clock.now): their ports are no longer this node's though the VM is still listed here.
   */
  private readonly movedOut = new Map<string, { routes: readonly MeshRoute[]; until: number }>();
  /** The last table and own VMs learned: a move out applies them again at once. */
  private last: { routes: readonly MeshRoute[]; own: readonly OwnVm[] } = { routes: [], own: [] };
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
    ports.handOffWith((vmId, routes) => this.handOff(vmId, routes));
  }

  /** TCP ports listened on now, each with where it forwards. */
  listening(): Map<number, MeshTarget> {
    return new Map([...this.listeners].map(([port, listener]) => [port, listener.target]));
  }

  /** The table of an accepted heartbeat answer (none: empty), beside this node's own VMs. */
  learn(routes: readonly MeshRoute[], own: readonly OwnVm[]): Promise<void> {
    this.ports.learn(routes);
    this.last = { routes, own };
    return this.applyLast();
  }

  private applyLast(): Promise<void> {
    // Never the caller's failure: the mesh is tried again at the next answer.
    return this.inTurn(() => this.apply(this.last.routes, this.last.own)).catch((error: Error) =>
      this.logger.warn(`node ${this.config.nodeId}: routing mesh not updated: ${error.message}`),
    );
  }

  /** A VM of this node moved live: its ports forwarded to its new node from now on. */
  private handOff(vmId: string, routes: readonly MeshRoute[]): Promise<void> {
    const tcp = routes.filter((route) => route.protocol === 'tcp');
    if (!this.config.routingMesh || tcp.length === 0) return Promise.resolve();
    this.movedOut.set(vmId, { routes: tcp, until: this.clock.now() + TAKEN_BACK_MS });
    this.logger.log(
      `node ${this.config.nodeId}: vm ${vmId} moved out live: routing mesh forwards ${this.config.wgIp}:${tcp.map((route) => route.host_port).join(',')}/tcp to node ${tcp[0].node_id} from now on`,
    );
    return this.applyLast();
  }

  onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    return this.inTurn(async () => {
      await Promise.all([...this.listeners.values()].map((listener) => listener.close()));
      this.listeners.clear();
    });
  }

  private async apply(table: readonly MeshRoute[], own: readonly OwnVm[]): Promise<void> {
    if (this.stopped) return;
    const now = this.clock.now();
    const routes = [...table, ...this.movedOutRoutes(table, now)];
    const ownPorts = new Set<number>();
    const files = (await this.sidecars?.all().catch(() => [])) ?? [];
    const vms = [
      ...own,
      ...files.map((file) => ({ vm_id: file.vm_id, host_ports: file.forwards })),
    ];
    for (const vm of vms) {
      // A VM moved out is still listed here until the controller releases its disk.
      if (vm.vm_id !== undefined && this.movedOut.has(vm.vm_id)) continue;
      for (const port of vm.host_ports ?? [])
        if (port.protocol === 'tcp') ownPorts.add(port.host_port);
    }
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

  /**
   * The routes of VMs moved out, while the table does not list them itself (once it does, its
   * own route serves); each judged by planMesh like the table's. A hand-off ends after
   * TAKEN_BACK_MS (by then the controller has released the VM's disk here) or when the VM moves
   * back (takeBack).
   */
  private movedOutRoutes(table: readonly MeshRoute[], now: number): MeshRoute[] {
    if (this.movedOut.size === 0) return [];
    for (const [vmId, { until }] of this.movedOut) if (until <= now) this.movedOut.delete(vmId);
    const listed = new Set(table.map((route) => route.vm_id));
    return [...this.movedOut]
      .filter(([vmId]) => !listed.has(vmId))
      .flatMap(([, { routes }]) => routes);
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
      for (const [vmId, { routes }] of this.movedOut) {
        if (routes.some((route) => route.host_port === port)) this.movedOut.delete(vmId);
      }
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
