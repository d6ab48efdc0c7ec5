import { Injectable, Optional } from '@nestjs/common';
import {
  DEFAULT_SPAWN_PORT,
  MIN_REQUESTED_HOST_PORT,
  type HostPort,
  type PortProtocol,
  type PublishedPortRequest,
  SSH_GUEST_PORT,
  portName,
} from '@app/fleet-domain';
import { VmHostConfig } from '../../config/vm-host.config';
import { HostPortUnavailableError, HostPortsExhaustedError } from '../vms.errors';
import { PortProbe, SOCKET_PORT_PROBE } from './port-probe';
import { MeshPorts } from './mesh-ports';

/**
 * TCP ports of the fleet's daemons, never given to a VM even when free on VM_WG_IP now: the
 * controller's API (9203), the agent's (9204) and the controller's operations listener (9206),
 * whichever of them runs, or will, on this node. The agent's own VM_SPAWN_PORT and
 * VM_METRICS_ADDR port are kept too, and VM_RESERVED_HOST_PORTS names the ones it cannot know
 * (the controller's listeners at other ports).
 */
export const FLEET_DAEMON_PORTS: readonly number[] = [9203, DEFAULT_SPAWN_PORT, 9206];

/** The fleet daemons' ports this agent knows of: FLEET_DAEMON_PORTS, its spawn and metrics ports. */
export function fleetDaemonPortsOf({
  spawnPort,
  metricsAddress,
}: Pick<VmHostConfig, 'spawnPort' | 'metricsAddress'>): number[] {
  return [...FLEET_DAEMON_PORTS, spawnPort, ...(metricsAddress ? [metricsAddress.port] : [])];
}

/** Picks of a free port that another VM already holds are tried again this often. */
const FREE_PORT_TRIES = 20;

/** What holds a port on this node: the VM whose forwards name it. */
export interface PortHolder {
  vm_id: string;
  ports: readonly HostPort[];
}

/**
 * The host ports of a new VM on this node's mesh address (VM_WG_IP): SSH first, then the
 * create's `ports` in their order. A port asked for must be free now and not held by another
 * VM of this node (running or not: a stopped VM keeps its ports) nor be a fleet daemon's;
 * otherwise a free one is picked.
 */
@Injectable()
export class HostPorts {
  /** Real sockets; a unit test puts a fake here. */
  probe: PortProbe = SOCKET_PORT_PROBE;

  constructor(
    private readonly config: VmHostConfig,
    /** The fleet's ports on other nodes (routing mesh): never picked here, so each is unique. */
    @Optional() private readonly mesh?: MeshPorts,
  ) {}

  /**
   * Throws HostPortUnavailableError naming the first port asked for that cannot be had, and
   * HostPortsExhaustedError, naming `vmId` (the VM asked for, when the controller named it), when
   * no free port is left to pick.
   */
  async assign(
    requested: readonly PublishedPortRequest[],
    holders: readonly PortHolder[],
    vmId?: string,
  ): Promise<HostPort[]> {
    const taken = new Map<string, string>();
    for (const port of this.config.reservedHostPorts ?? []) {
      taken.set(portName(port, 'tcp'), 'reserved by VM_RESERVED_HOST_PORTS');
    }
    for (const port of this.daemonPorts()) {
      taken.set(portName(port, 'tcp'), 'a fleet daemon port');
    }
    for (const holder of holders) {
      for (const port of holder.ports) {
        taken.set(portName(port.host_port, port.protocol), `held by vm ${holder.vm_id}`);
      }
    }
    for (const [name, why] of this.mesh?.allPublishedElsewhere() ?? []) {
      if (!taken.has(name)) taken.set(name, why);
    }
    for (const [index, port] of requested.entries()) {
      if (port.host_port === undefined) continue;
      const name = portName(port.host_port, port.protocol);
      const holder = taken.get(name);
      if (holder !== undefined) throw this.unavailable(index, name, holder);
      if (!(await this.probe.isFree(this.config.wgIp, port.host_port, port.protocol))) {
        throw this.unavailable(index, name, 'in use by another process');
      }
      taken.set(name, 'asked for by this create');
    }
    const forVm = vmId === undefined ? 'a new VM' : `vm ${vmId}`;
    const ssh = await this.freePort('tcp', taken, forVm);
    const forwards: HostPort[] = [{ host_port: ssh, guest_port: SSH_GUEST_PORT, protocol: 'tcp' }];
    for (const port of requested) {
      const hostPort = port.host_port ?? (await this.freePort(port.protocol, taken, forVm));
      forwards.push({ host_port: hostPort, guest_port: port.guest_port, protocol: port.protocol });
    }
    return forwards;
  }

  /**
   * A restored VM's forwards: each guest port of `wanted` (SSH first) on the same host port
   * when `keepHostPorts` and it is free here (held by no VM, no daemon's, not reserved, not
   * bound), else on a free one; never refused for a port taken.
   */
  async keep(
    wanted: readonly HostPort[],
    holders: readonly PortHolder[],
    keepHostPorts: boolean,
    vmId: string,
  ): Promise<HostPort[]> {
    const taken = new Map<string, string>();
    for (const port of this.config.reservedHostPorts ?? []) taken.set(portName(port, 'tcp'), '');
    for (const port of this.daemonPorts()) taken.set(portName(port, 'tcp'), '');
    for (const holder of holders) {
      for (const port of holder.ports) taken.set(portName(port.host_port, port.protocol), '');
    }
    // Another VM's port elsewhere is not kept; this VM's own (moved or restored here) the
    // routing mesh listens on, and gives back before the port is tried.
    for (const [name] of this.mesh?.allPublishedElsewhere(vmId) ?? []) taken.set(name, '');
    const forwards: HostPort[] = [];
    for (const port of wanted) {
      const name = portName(port.host_port, port.protocol);
      const keepable =
        keepHostPorts && port.host_port >= MIN_REQUESTED_HOST_PORT && !taken.has(name);
      if (keepable) await this.mesh?.take(port.host_port, port.protocol);
      const kept =
        keepable && (await this.probe.isFree(this.config.wgIp, port.host_port, port.protocol));
      const hostPort = kept
        ? port.host_port
        : await this.freePort(port.protocol, taken, `vm ${vmId}`);
      taken.set(portName(hostPort, port.protocol), '');
      forwards.push({ host_port: hostPort, guest_port: port.guest_port, protocol: port.protocol });
    }
    return forwards;
  }

  private daemonPorts(): number[] {
    return fleetDaemonPortsOf(this.config);
  }

  private unavailable(index: number, name: string, why: string): HostPortUnavailableError {
    return new HostPortUnavailableError(
      `ports[${index}].host_port: ${name} on node ${this.config.nodeId} (${this.config.wgIp}) is ${why}; no VM was made`,
    );
  }

  /**
   * A port free on VM_WG_IP now that no VM here holds; marked taken for the rest of this pick.
   * None left (the kernel's range all bound, or its picks all held): HostPortsExhaustedError.
   */
  private async freePort(
    protocol: PortProtocol,
    taken: Map<string, string>,
    forVm: string,
  ): Promise<number> {
    for (let attempt = 0; attempt < FREE_PORT_TRIES; attempt++) {
      let port: number;
      try {
        port = await this.probe.anyFree(this.config.wgIp, protocol);
      } catch (error) {
        // The kernel's whole range is bound; anything else (VM_WG_IP gone) is not capacity.
        if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
        throw await this.exhausted(protocol, forVm, 'every port in it is bound');
      }
      const name = portName(port, protocol);
      if (taken.has(name)) continue;
      taken.set(name, 'picked for this create');
      return port;
    }
    throw await this.exhausted(
      protocol,
      forVm,
      `${FREE_PORT_TRIES} picks were all held by its VMs (stopped ones too) or fleet daemons`,
    );
  }

  private async exhausted(
    protocol: PortProtocol,
    forVm: string,
    why: string,
  ): Promise<HostPortsExhaustedError> {
    const range = (await this.probe.pickRange()) ?? 'its range';
    return new HostPortsExhaustedError(
      `no free ${protocol} host port for ${forVm} on node ${this.config.nodeId} (${this.config.wgIp}) in ${range} (net.ipv4.ip_local_port_range): ${why}; no VM was made`,
    );
  }
}
