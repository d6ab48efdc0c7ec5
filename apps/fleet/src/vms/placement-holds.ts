import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Clock } from '@app/daemon';
import {
  CreateVmRequest,
  countedDiskGb,
  NodeState,
  RAM_HOLD_MARGIN_MS,
  holdRam,
  liveSince,
  noteDispatchFailure,
  placeVm,
  placementCandidate,
  releaseHold,
  shortened,
} from '@app/fleet-domain';
import { FleetMetrics } from '../metrics/fleet-metrics.service';
import { NodesRepository } from '../nodes/nodes.repository';
import { NodeDrains } from '../nodes/node-drains.repository';
import { drainReasons, withDrainReason } from '../nodes/drained-nodes';
import { Spawned } from './vm-host.client';
import { AgentCallError, VmHostClientSettings } from './agent-calls';
import { PlacementRefusedError } from './vms.errors';

/** Placement is retried when a concurrent create took the chosen node's RAM first. */
const PLACEMENT_ATTEMPTS = 5;

/** Where a dispatch goes, and the hold that counts its RAM there (this create's own, or not). */
export interface Dispatch {
  node: NodeState;
  holdId: string;
  ownHold: boolean;
  /** The id the controller minted for the VM, sent with the spawn. */
  vmId: string;
  /** Why placement chose no other node, for the log line. */
  passedOver?: string[];
}

/**
 * Placement's reads and writes of the stored nodes for one create: the choice among the live
 * nodes and the RAM held on it (placeAndHold), the hold given back, a node's failure noted, the
 * id an agent answered checked against every node's. Part of VmPlacementService.
 */
export class PlacementHolds {
  constructor(
    private readonly nodes: NodesRepository,
    private readonly clock: Clock,
    private readonly metrics: FleetMetrics,
    private readonly vmHostSettings: VmHostClientSettings,
    private readonly logger: Logger,
    /** Absent (a unit test's service): no node is drained. */
    private readonly drains?: NodeDrains,
  ) {}

  /**
   * The agent made the VM under the id the controller minted, and no other node holds that id:
   * anything else is refused as answered unusably, nothing recorded; both ids logged. An agent
   * of the original services mints its own ids (it made a VM: the create ends there). A replay
   * (200) naming another VM says the agent made nothing now, holding a VM for the spawn key
   * that this controller never dispatched (a node squatting a guessable key, or a record the
   * controller lost): never taken as the key's VM, whatever the node lists, and another node
   * may be asked.
   */
  async checkSpawnedId(node: NodeState, asked: string, { vm, replayed }: Spawned): Promise<void> {
    const answered = vm.vm_id;
    // The index of VM ids answers, not a read of every node. The store down now: the id asked
    // for, which this controller minted, is taken as it is (the VM was made; its record waits
    // for the node's next heartbeat), anything else refused.
    const owners = await this.nodes
      .ownersOf([answered], node.node_id)
      .catch((storeError: Error) => {
        this.logger.warn(
          `node ${node.node_id}: vm ${answered} not checked against the other nodes' VMs (${storeError.message})`,
        );
        return undefined;
      });
    if (owners === undefined && answered === asked) return;
    const holder = owners?.get(answered);
    let problem: string;
    if (holder !== undefined) {
      problem = `answered vm ${answered} (asked for vm ${asked}), which node ${holder} already holds`;
    } else if (answered !== asked && replayed) {
      problem = `answered 200 with vm ${answered}, not the vm ${asked} it was asked to make: a VM for this spawn key that this controller never dispatched there`;
    } else if (answered !== asked) {
      problem = `answered vm ${answered}, not the vm ${asked} it was asked to make (an agent that mints its own ids, or a hostile one)`;
    } else {
      return;
    }
    this.logger.warn(`node ${node.node_id}: /v1/spawn ${problem}; nothing recorded`);
    throw new AgentCallError(
      `agent of node ${node.node_id} answered unusably`,
      'failed',
      // A replay of another VM: by the agent's own answer, it made nothing for this dispatch.
      holder === undefined && replayed,
    );
  }

  /** Gives the dispatch's own hold back (not another create's); a store error only logs. */
  async giveBack({
    node,
    holdId,
    ownHold,
  }: Pick<Dispatch, 'node' | 'holdId' | 'ownHold'>): Promise<void> {
    if (!ownHold) return;
    await this.nodes
      .update(node.node_id, releaseHold(holdId))
      .catch((storeError: Error) =>
        this.logger.warn(
          `node ${node.node_id}: RAM hold not given back (${storeError.message}); it ends at its deadline`,
        ),
      );
  }

  /** Passes the node over for a while (see dispatch-health); a store error only costs that. */
  async noteNodeFailure(nodeId: string, reason: string): Promise<void> {
    this.metrics.countDispatchFailure();
    await this.nodes
      .update(nodeId, noteDispatchFailure(reason, this.clock.now()))
      .catch((storeError: Error) =>
        this.logger.warn(`node ${nodeId}: dispatch failure not recorded (${storeError.message})`),
      );
  }

  /** `tried`: nodes this create already failed on, passed over whatever the store says. */
  async placeAndHold(
    request: CreateVmRequest,
    spawnKey: string,
    vmId: string,
    tried: readonly string[] = [],
  ): Promise<Dispatch> {
    for (let attempt = 1; ; attempt++) {
      const now = this.clock.now();
      const notBefore = liveSince(now);
      const live = await this.nodes.listLive(notBefore);
      const drained = await drainReasons(this.drains);
      const placement = placeVm(
        request,
        live.map((state) => {
          const candidate = withDrainReason(placementCandidate(state, now), drained);
          if (tried.includes(state.node_id) && candidate.dispatch_trouble === undefined) {
            candidate.dispatch_trouble = 'dispatch failed just now';
          }
          return candidate;
        }),
      );
      if (placement.kind !== 'placed') {
        throw new PlacementRefusedError(placement.kind, placement.message);
      }
      const holdId = randomUUID();
      const node = live.find((candidate) => candidate.node_id === placement.node_id)!;
      const held = await this.nodes.update(
        node.node_id,
        holdRam(
          {
            holdId,
            ramMb: request.ram_mb,
            requiredFreeMb: placement.required_free_mb,
            nowMs: now,
            // The dispatch cannot take longer than its timeout; the margin covers the rest.
            expiresAtMs: now + this.vmHostSettings.timeoutMs + RAM_HOLD_MARGIN_MS,
            spawnKey,
            vmId,
            // Counted against the tenant's quotas until a heartbeat lists the VM.
            ...(request.tenant_id
              ? {
                  tenant: {
                    tenant_id: request.tenant_id,
                    vcpu_count: request.vcpu_count,
                    // The disk its copies take counted in (countedDiskGb), as once listed.
                    ...(request.disk_gb !== undefined
                      ? { disk_gb: countedDiskGb(request.disk_gb, request.copies) }
                      : {}),
                  },
                }
              : {}),
          },
          notBefore,
        ),
      );
      if (held) return { node, holdId, ownHold: true, vmId, passedOver: placement.passed_over };
      if (attempt === PLACEMENT_ATTEMPTS) {
        throw new PlacementRefusedError(
          'no-capacity',
          `node ${node.node_id} lost its room to concurrent creates ${attempt} times; try again (other nodes: ${shortened(placement.passed_over) || 'none'})`,
        );
      }
    }
  }
}
