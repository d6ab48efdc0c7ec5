import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Clock } from '@app/daemon';
import {
  CreateVmRequest,
  NodeState,
  VmRecord,
  holdRam,
  liveSince,
  placeVm,
  recordDispatchedVm,
  releaseHold,
  removeVm,
} from '@app/fleet-domain';
import { FleetMetrics } from '../metrics/fleet-metrics.service';
import { NodesRepository } from '../nodes/nodes.repository';
import { VmHostClient } from './vm-host.client';
import { PlacementRefusedError, VmNotFoundError } from './vms.errors';

/** Placement is retried when a concurrent create took the chosen node's RAM first. */
const PLACEMENT_ATTEMPTS = 5;

@Injectable()
export class VmsService {
  private readonly logger = new Logger('Vms');

  constructor(
    private readonly nodes: NodesRepository,
    private readonly vmHost: VmHostClient,
    private readonly clock: Clock,
    private readonly metrics: FleetMetrics = new FleetMetrics(),
  ) {}

  async listVms(tenantId?: string): Promise<VmRecord[]> {
    const live = await this.nodes.listLive(liveSince(this.clock.now()));
    const vms = live.flatMap((node) => node.vms);
    return tenantId === undefined ? vms : vms.filter((vm) => vm.tenant_id === tenantId);
  }

  /**
   * Places the VM, holds its RAM on the chosen node (so concurrent creates see it taken),
   * and asks that node's agent to start it. Nothing is recorded when the agent fails.
   */
  async createVm(request: CreateVmRequest): Promise<VmRecord> {
    const { node, holdId } = await this.placeAndHold(request);
    let vm: VmRecord;
    try {
      vm = await this.metrics.timeDispatch(this.vmHost.spawn(node, request));
    } catch (error) {
      await this.nodes.update(node.node_id, releaseHold(holdId));
      this.metrics.countPlacement('agent_failed');
      this.logger.warn(`spawn on node ${node.node_id} failed: ${(error as Error).message}`);
      throw error;
    }
    // The agent keeps the tenant; an agent that does not echo it still gets it recorded.
    vm.tenant_id = vm.tenant_id ?? request.tenant_id ?? null;
    await this.nodes.update(node.node_id, recordDispatchedVm(holdId, vm));
    this.metrics.countPlacement('placed');
    this.logger.log(
      `vm ${vm.vm_id} (${vm.vm_type}, ${request.ram_mb} MB) placed on node ${node.node_id}${vm.tenant_id ? ` for tenant ${vm.tenant_id}` : ''}`,
    );
    return vm;
  }

  /** Tells the owning agent to destroy the VM; the record stays when the agent cannot be reached. */
  async deleteVm(vmId: string): Promise<void> {
    const live = await this.nodes.listLive(liveSince(this.clock.now()));
    const owner = live.find((node) => node.vms.some((vm) => vm.vm_id === vmId));
    if (!owner) throw new VmNotFoundError(vmId);
    const outcome = await this.vmHost.destroy(owner, vmId);
    await this.nodes.update(owner.node_id, removeVm(vmId));
    this.logger.log(
      `vm ${vmId} on node ${owner.node_id} ${outcome === 'destroyed' ? 'destroyed' : 'was already gone from its agent'}`,
    );
  }

  private async placeAndHold(
    request: CreateVmRequest,
  ): Promise<{ node: NodeState; holdId: string }> {
    for (let attempt = 1; ; attempt++) {
      const notBefore = liveSince(this.clock.now());
      const live = await this.nodes.listLive(notBefore);
      const placement = placeVm(
        request,
        live.map((state) => state.record),
      );
      if (placement.kind !== 'placed') {
        this.metrics.countPlacement(
          placement.kind === 'preferred-node-unfit' ? 'refused_unfit' : 'refused_no_room',
        );
        throw new PlacementRefusedError(placement.kind, placement.message);
      }
      const holdId = randomUUID();
      const node = live.find((candidate) => candidate.node_id === placement.node_id)!;
      const held = await this.nodes.update(
        node.node_id,
        holdRam(
          { holdId, ramMb: request.ram_mb, requiredFreeMb: placement.required_free_mb },
          notBefore,
        ),
      );
      if (held) return { node, holdId };
      if (attempt === PLACEMENT_ATTEMPTS) {
        this.metrics.countPlacement('refused_no_room');
        throw new PlacementRefusedError(
          'no-capacity',
          `node ${node.node_id} lost its room to concurrent creates ${attempt} times; try again`,
        );
      }
    }
  }
}
