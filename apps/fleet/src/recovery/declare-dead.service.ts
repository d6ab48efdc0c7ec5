import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { DEFAULT_FENCE_AFTER_S, DeclaredDeadNode, toRfc3339 } from '@app/fleet-domain';
import { FleetConfig } from '../config/fleet.config';
import { NodeLeases } from '../nodes/node-leases';
import { NodesRepository } from '../nodes/nodes.repository';
import { DeclareDeadRefusedError } from './recovery.errors';

/**
 * `ppn-fleet node declare-dead <node_id>`: an operator who knows a machine is gone skips the
 * wait of VM_FLEET_RECOVER_AFTER_S. Refused while the node's lease is live: a node that still
 * renews it may still run its VMs, and only a lapsed lease means it has fenced them.
 */
@Injectable()
export class DeclareDeadService {
  private readonly logger = new Logger('Recovery');

  constructor(
    private readonly leases: NodeLeases,
    private readonly nodes: NodesRepository,
    private readonly config: FleetConfig,
    private readonly clock: Clock,
  ) {}

  async declareDead(nodeId: string): Promise<DeclaredDeadNode> {
    if (!this.leases.enabled) {
      throw new DeclareDeadRefusedError(
        409,
        `node ${nodeId}: declare-dead needs fleet state in etcd (VM_FLEET_ETCD_ENDPOINTS): without node leases nothing is fenced, so nothing is recovered; restore each VM with ppn-fleet vm restore`,
      );
    }
    const outcome = await this.leases.declareDead(nodeId);
    const renewedAt = (wallMs?: number) => (wallMs === undefined ? null : toRfc3339(wallMs));
    if (outcome.kind === 'unknown') {
      throw new DeclareDeadRefusedError(
        404,
        `node ${nodeId}: no lease of it is known in etcd (it never heartbeat to a controller on etcd, or its recovery is done)`,
      );
    }
    if (outcome.kind === 'lease-live') {
      const fenceAfterS = this.config.fenceAfterS ?? DEFAULT_FENCE_AFTER_S;
      throw new DeclareDeadRefusedError(
        409,
        `node ${nodeId} still renews its lease (last renewed ${renewedAt(outcome.renewedAtWallMs) ?? 'at an unknown time'}, ${outcome.leftS} s left): it heartbeats to a controller, so it may run its VMs; a node is declared dead only once its lease ran out (${fenceAfterS} s, VM_FLEET_FENCE_AFTER_S, after its last heartbeat), when it has ended them itself`,
      );
    }
    const state = (await this.nodes.listAll()).find((node) => node.node_id === nodeId);
    const protectedIds = [
      ...(state?.vms ?? []),
      ...(state?.silent_vms.map((silent) => silent.vm) ?? []),
    ]
      .filter((vm) => (vm.copies?.count ?? this.config.copies ?? 0) >= 1)
      .map((vm) => vm.vm_id);
    this.logger.warn(
      `node ${nodeId} declared dead by an operator (its lease lapsed, last renewed ${renewedAt(outcome.renewedAtWallMs) ?? 'at an unknown time'}, ${toRfc3339(this.clock.wallNow())}): the leader recovers its ${protectedIds.length} protected VM(s) without waiting for VM_FLEET_RECOVER_AFTER_S`,
    );
    return {
      node_id: nodeId,
      last_renewed_at: renewedAt(outcome.renewedAtWallMs),
      protected_vm_ids: protectedIds,
    };
  }
}
