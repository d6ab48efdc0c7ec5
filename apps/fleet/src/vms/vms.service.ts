import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '@app/daemon';
import {
  FleetVm,
  CopyPolicy,
  HeldCopy,
  NodeState,
  copiesHeld,
  copiesOf,
  copyFieldsOf,
  describeSpeaker,
  forgetSilentVm,
  isLive,
  listedVms,
  liveSince,
  removeVm,
  shownVm,
  toRfc3339,
} from '@app/fleet-domain';
import { NodesRepository } from '../nodes/nodes.repository';
import { VmHostClient } from './vm-host.client';
import { VmNodeIsBackError, VmNotFoundError, VmOnSilentNodeError } from './vms.errors';

/** A VM as GET /v1/vms shows it, with the stored node that lists it. */
export interface ListedFleetVm {
  vm: FleetVm;
  node: NodeState;
  /** Listed as last reported: its node dropped out, or another agent now speaks for its node id. */
  silent: boolean;
}

/** The VMs as the store has them: the listing, and deletion through the owning agent. */
@Injectable()
export class VmsService {
  private readonly logger = new Logger('Vms');

  constructor(
    private readonly nodes: NodesRepository,
    private readonly vmHost: VmHostClient,
    private readonly clock: Clock,
  ) {}

  /**
   * The VMs of every node stored: those of live nodes, and the last reported ones of nodes
   * that dropped out while listing VMs or of an earlier agent of a node id (marked with
   * node_silent_since), which may still run (see listedVms).
   */
  async listVms(tenantId?: string): Promise<FleetVm[]> {
    return (await this.listWithNodes(tenantId)).map(({ vm }) => vm);
  }

  /** listVms, each VM with the node that lists it (for calls to that node's agent). */
  async listWithNodes(tenantId?: string): Promise<ListedFleetVm[]> {
    const notBefore = liveSince(this.clock.now());
    const vms: ListedFleetVm[] = [];
    const states = await this.nodes.listAll();
    // The copies the live nodes hold, from the same read: one pass, whatever the VMs' number.
    const held = copiesHeld(states, notBefore);
    for (const { vm, node, silent_since_wall_ms } of listedVms(states, notBefore)) {
      if (tenantId === undefined || vm.tenant_id === tenantId) {
        const silentSince =
          silent_since_wall_ms === undefined ? undefined : toRfc3339(silent_since_wall_ms);
        vms.push({
          vm: shownVm(vm, node.node_id, silentSince, copyFieldsOf(held, vm, node.node_id)),
          node,
          silent: silent_since_wall_ms !== undefined,
        });
      }
    }
    return vms;
  }

  /**
   * The VM as findWithNode finds it, with its copy policy as its agent last reported it (null:
   * none reported) and every copy of it live nodes other than its own hold, freshest first: one
   * read of the nodes.
   */
  async findWithCopies(
    vmId: string,
  ): Promise<ListedFleetVm & { policy: CopyPolicy | null; copies: HeldCopy[] }> {
    const notBefore = liveSince(this.clock.now());
    const states = await this.nodes.listAll();
    // listedVms puts a live node's report first: the fresher one, should a silent one list it.
    const listed = listedVms(states, notBefore).find(({ vm }) => vm.vm_id === vmId);
    if (!listed) throw new VmNotFoundError(vmId);
    const { vm, node, silent_since_wall_ms } = listed;
    const held = copiesHeld(states, notBefore);
    const silentSince =
      silent_since_wall_ms === undefined ? undefined : toRfc3339(silent_since_wall_ms);
    return {
      vm: shownVm(vm, node.node_id, silentSince, copyFieldsOf(held, vm, node.node_id)),
      node,
      silent: silent_since_wall_ms !== undefined,
      policy:
        vm.copies === undefined ? null : { count: vm.copies.count, every_s: vm.copies.every_s },
      copies: copiesOf(held, vmId, node.node_id),
    };
  }

  /** The VM as listVms shows it, with its node; VmNotFoundError when no node lists it. */
  async findWithNode(vmId: string): Promise<ListedFleetVm> {
    // listedVms puts a live node's report first: the fresher one, should a silent one list it.
    const listed = (await this.listWithNodes()).find(({ vm }) => vm.vm_id === vmId);
    if (!listed) throw new VmNotFoundError(vmId);
    return listed;
  }

  /**
   * Tells the owning agent to destroy the VM; the record stays when the agent cannot be
   * reached. A VM no live agent manages (its node dropped out, or a SilentVm) has no agent to
   * ask: a 409 that says what to do, or with `forget` (a machine gone for good) its record is
   * forgotten, nothing stopped. `forget` for a VM a live agent manages is a 409 too: it is
   * destroyed by a DELETE without it.
   */
  async deleteVm(vmId: string, forget = false): Promise<void> {
    const now = this.clock.now();
    const notBefore = liveSince(now);
    // listedVms puts a live node's report first: the fresher one, should a silent one list it.
    const listed = listedVms(await this.nodes.listAll(), notBefore).find(
      ({ vm }) => vm.vm_id === vmId,
    );
    if (!listed) throw new VmNotFoundError(vmId);
    const owner = listed.node;
    if (listed.silent_since_wall_ms !== undefined) {
      const lastHeartbeat = toRfc3339(listed.silent_since_wall_ms);
      const silentForS = (this.clock.wallNow() - listed.silent_since_wall_ms) / 1000;
      const silentVm = owner.silent_vms.find((silent) => silent.vm.vm_id === vmId);
      const listedBy =
        isLive(owner, notBefore) && silentVm
          ? `the agent at ${describeSpeaker(silentVm.speaker)}`
          : undefined;
      if (!forget) {
        throw new VmOnSilentNodeError(
          vmId,
          owner.node_id,
          lastHeartbeat,
          silentVm ? silentForS : (now - owner.received_at_ms) / 1000,
          listedBy,
        );
      }
      const outcome = await this.nodes.update(owner.node_id, forgetSilentVm(vmId, notBefore));
      // Back meanwhile: its agent can destroy it.
      if (outcome === 'node-live') throw new VmNodeIsBackError(vmId, owner.node_id);
      if (outcome === 'unknown') throw new VmNotFoundError(vmId);
      this.logger.warn(
        `vm ${vmId} on node ${owner.node_id} forgotten on request (?forget=true): ${listedBy === undefined ? `its node is silent since ${lastHeartbeat}` : `listed by ${listedBy} until ${lastHeartbeat}, not by the agent heartbeating as ${owner.node_id} now`}; nothing was stopped, so if that machine comes back its agent lists the VM again`,
      );
      return;
    }
    if (forget) throw new VmNodeIsBackError(vmId, owner.node_id);
    const outcome = await this.vmHost.destroy(owner, vmId);
    await this.nodes.update(owner.node_id, removeVm(vmId));
    this.logger.log(
      `vm ${vmId} on node ${owner.node_id} ${outcome === 'destroyed' ? 'destroyed' : 'was already gone from its agent'}`,
    );
  }
}
