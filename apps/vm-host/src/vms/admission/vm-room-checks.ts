import { Logger } from '@nestjs/common';
import {
  CreateVmRequest,
  HostPort,
  MAX_VMS_PER_HEARTBEAT,
  SpawnVmRequest,
  capacityRefusal,
} from '@app/fleet-domain';
import { VmHostConfig } from '../../config/vm-host.config';
import { HostFactsService } from '../../host-facts/host-facts.service';
import { HostPorts } from '../ports/host-ports';
import { VmDiskRoom } from './vm-disk-room';
import { VmLifeCycles } from '../life-cycle/vm-life-cycles';
import { VmDriver } from '../vm-driver';
import { VmSidecar } from '../files/vm-sidecar';
import { VmDoesNotFitError, messageOf } from '../vms.errors';

/**
 * What the node has room for, as an admission checks it before it makes anything: the ports
 * (SSH and the create's), RAM and vCPUs beside every VM committed, the disk beside every VM
 * disk. Each refusal is logged and thrown naming the numbers. Part of VmAdmissionService,
 * which runs these under its one lock.
 */
export class VmRoomChecks {
  constructor(
    private readonly hostFacts: HostFactsService,
    private readonly driver: VmDriver,
    private readonly lifecycle: VmLifeCycles,
    private readonly diskRoom: VmDiskRoom,
    private readonly hostPorts: HostPorts,
    private readonly config: VmHostConfig,
    private readonly logger: Logger,
  ) {}

  /**
   * SSH and the create's ports on VM_WG_IP, none another VM here holds (running or stopped);
   * a host_port asked for that is taken is refused naming it, before anything is made.
   */
  async assignPorts(request: SpawnVmRequest, sidecars: VmSidecar[]): Promise<HostPort[]> {
    try {
      return await this.hostPorts.assign(
        request.ports ?? [],
        sidecars.map((sidecar) => ({
          vm_id: sidecar.vm_id,
          ports: [...(sidecar.forwards ?? []), ...sidecar.host_ports],
        })),
        request.vm_id,
      );
    } catch (error) {
      this.logger.warn(`node ${this.config.nodeId} refused a VM: ${messageOf(error)}`);
      throw error;
    }
  }

  /**
   * Refuses, naming the numbers, a VM the node cannot hold beside the VMs it has: also one
   * more than a heartbeat may carry (any state counts), which the controller would refuse.
   */
  async checkCapacity(request: CreateVmRequest, sidecars: VmSidecar[]): Promise<void> {
    if (sidecars.length >= MAX_VMS_PER_HEARTBEAT) {
      const refusal = `this node holds ${sidecars.length} VMs, the most a heartbeat may report (limit ${MAX_VMS_PER_HEARTBEAT}); delete one first`;
      this.logger.warn(`node ${this.config.nodeId} refused a VM: ${refusal}`);
      throw new VmDoesNotFitError(refusal);
    }
    const refusal = await this.capacityRefusal(request.ram_mb, request.vcpu_count, sidecars);
    if (refusal) {
      this.logger.warn(`node ${this.config.nodeId} refused a VM: ${refusal}`);
      throw new VmDoesNotFitError(refusal);
    }
  }

  /**
   * Refuses, naming disk_gb and the node's disk room, a VM whose disk (at its virtual size)
   * does not fit beside every VM disk here (any state: a stopped VM keeps its disk).
   */
  async checkDiskRoom(request: CreateVmRequest, sidecars: VmSidecar[]): Promise<void> {
    const diskGb = request.disk_gb ?? undefined;
    try {
      await this.diskRoom.checkSize(diskGb);
    } catch (error) {
      this.logger.warn(`node ${this.config.nodeId} refused a VM: ${messageOf(error)}`);
      throw error;
    }
    const refusal = await this.diskRoom.refusal({ diskGb }, sidecars);
    if (refusal) {
      this.logger.warn(`node ${this.config.nodeId} refused a VM: ${refusal}`);
      throw new VmDoesNotFitError(refusal);
    }
  }

  /** Why the node cannot hold RAM and vCPUs beside `sidecars` (any state), or undefined. */
  async capacityRefusal(
    ramMb: number,
    vcpuCount: number,
    sidecars: VmSidecar[],
  ): Promise<string | undefined> {
    const [host, found] = await Promise.all([
      this.hostFacts.capacity(),
      this.driver.find(sidecars.map((sidecar) => sidecar.vm_id)),
    ]);
    return capacityRefusal(
      { ramMb, vcpuCount },
      {
        memory: { totalMb: host.ram_total_mb, usedMb: host.ram_used_mb },
        cpuCores: host.cpu_cores,
        vcpuOvercommit: this.config.vcpuOvercommit,
      },
      this.lifecycle.committed(sidecars, found),
    );
  }
}
