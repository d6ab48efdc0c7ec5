import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Clock } from '@app/daemon';
import {
  CreateVmRequest,
  NodeState,
  RAM_HOLD_MARGIN_MS,
  VmRecord,
  findEarlierCreate,
  holdRam,
  keyHashOf,
  liveSince,
  placeVm,
  placementCandidate,
  recordDispatchedVm,
  releaseHold,
  removeVm,
  shortened,
  shownVm,
} from '@app/fleet-domain';
import { FleetMetrics } from '../metrics/fleet-metrics.service';
import { NodesRepository } from '../nodes/nodes.repository';
import { spawnKeyOf } from './spawn-key';
import { VmHostClient, VmHostClientSettings } from './vm-host.client';
import { IdempotencyKeyReusedError, PlacementRefusedError, VmNotFoundError } from './vms.errors';

/** Placement is retried when a concurrent create took the chosen node's RAM first. */
const PLACEMENT_ATTEMPTS = 5;

/** Passed-over nodes a placement log line names. */
const PASSED_OVER_LOGGED = 3;

/** A created VM; `replayed`: an earlier create with the same Idempotency-Key made it (200). */
export interface CreatedVm {
  vm: VmRecord;
  replayed: boolean;
}

/** Where a dispatch goes, and the hold that counts its RAM there (this create's own, or not). */
interface Dispatch {
  node: NodeState;
  holdId: string;
  ownHold: boolean;
  /** Why placement chose no other node, for the log line. */
  passedOver?: string[];
}

@Injectable()
export class VmsService {
  private readonly logger = new Logger('Vms');
  /** Keyed creates in progress on this controller, by key hash: a second one waits for the first. */
  private readonly keyedCreates = new Map<string, { spawnKey: string; done: Promise<CreatedVm> }>();

  constructor(
    private readonly nodes: NodesRepository,
    private readonly vmHost: VmHostClient,
    private readonly vmHostSettings: VmHostClientSettings,
    private readonly clock: Clock,
    private readonly metrics: FleetMetrics = new FleetMetrics(),
  ) {}

  async listVms(tenantId?: string): Promise<VmRecord[]> {
    const live = await this.nodes.listLive(liveSince(this.clock.now()));
    const vms = live.flatMap((node) => node.vms);
    return (tenantId === undefined ? vms : vms.filter((vm) => vm.tenant_id === tenantId)).map(
      shownVm,
    );
  }

  /**
   * Creates the VM, or with an Idempotency-Key, answers the VM an earlier create with the same
   * key and body made (a key reused with another body is refused). Concurrent creates with the
   * same key on this controller share one dispatch.
   */
  async createVm(request: CreateVmRequest, idempotencyKey?: string): Promise<CreatedVm> {
    if (idempotencyKey === undefined) {
      // A key of its own, never repeated: nothing the agent answers makes this a retry.
      const created = await this.placeAndDispatch(request, spawnKeyOf(request));
      return { vm: created.vm, replayed: false };
    }
    const spawnKey = spawnKeyOf(request, idempotencyKey);
    const keyHash = keyHashOf(spawnKey);
    const running = this.keyedCreates.get(keyHash);
    if (running) {
      if (running.spawnKey !== spawnKey) throw new IdempotencyKeyReusedError();
      return { vm: (await running.done).vm, replayed: true };
    }
    const done = this.createKeyed(request, spawnKey);
    this.keyedCreates.set(keyHash, { spawnKey, done });
    try {
      return await done;
    } finally {
      this.keyedCreates.delete(keyHash);
    }
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

  /**
   * A keyed create: what an earlier one with the key left decides. Its VM listed: that VM.
   * Its RAM still held (its controller may have died mid-dispatch): the same node is asked
   * again with the same key, and its agent answers with the VM the key made, not a second one.
   */
  private async createKeyed(request: CreateVmRequest, spawnKey: string): Promise<CreatedVm> {
    const now = this.clock.now();
    const live = await this.nodes.listLive(liveSince(now));
    const earlier = findEarlierCreate(live, keyHashOf(spawnKey), now);
    if (!earlier) return this.placeAndDispatch(request, spawnKey);
    if (earlier.spawn_key !== spawnKey) throw new IdempotencyKeyReusedError();
    if (earlier.kind === 'vm') {
      this.logger.log(
        `vm ${earlier.vm.vm_id} on node ${earlier.node.node_id} answered again for a retried create with the same Idempotency-Key`,
      );
      return { vm: shownVm(earlier.vm), replayed: true };
    }
    const created = await this.dispatch(
      { node: earlier.node, holdId: earlier.hold_id, ownHold: false },
      request,
      spawnKey,
    );
    return { vm: created.vm, replayed: true };
  }

  /**
   * Places the VM, holds its RAM on the chosen node (so concurrent creates see it taken),
   * and asks that node's agent to start it.
   */
  private async placeAndDispatch(request: CreateVmRequest, spawnKey: string): Promise<CreatedVm> {
    return this.dispatch(await this.placeAndHold(request, spawnKey), request, spawnKey);
  }

  /**
   * Asks the node's agent to start the VM. A failed dispatch gives its own hold back. Once
   * the agent accepted, the client gets the VM even if its record cannot be written (the
   * store is down): the node's next heartbeat records it.
   */
  private async dispatch(
    { node, holdId, ownHold, passedOver = [] }: Dispatch,
    request: CreateVmRequest,
    spawnKey: string,
  ): Promise<CreatedVm> {
    let spawned;
    try {
      spawned = await this.metrics.timeDispatch(this.vmHost.spawn(node, request, spawnKey));
    } catch (error) {
      this.metrics.countPlacement('agent_failed');
      this.logger.warn(`spawn on node ${node.node_id} failed: ${(error as Error).message}`);
      if (ownHold) {
        await this.nodes
          .update(node.node_id, releaseHold(holdId))
          .catch((storeError: Error) =>
            this.logger.warn(
              `node ${node.node_id}: RAM hold not given back (${storeError.message}); it ends at its deadline`,
            ),
          );
      }
      throw error;
    }
    // The agent keeps the tenant; an agent that does not echo it still gets it recorded.
    const vm = shownVm({
      ...spawned.vm,
      tenant_id: spawned.vm.tenant_id ?? request.tenant_id ?? null,
    });
    try {
      await this.nodes.update(
        node.node_id,
        recordDispatchedVm(holdId, { ...vm, idempotency_key: spawnKey }),
      );
    } catch (error) {
      this.logger.warn(
        `vm ${vm.vm_id} started on node ${node.node_id} but could not be recorded (${(error as Error).message}); answered anyway, the node's next heartbeat records it`,
      );
    }
    this.metrics.countPlacement('placed');
    const others =
      passedOver.length === 0
        ? ''
        : `; passed over ${passedOver.slice(0, PASSED_OVER_LOGGED).join('; ')}${passedOver.length > PASSED_OVER_LOGGED ? ` and ${passedOver.length - PASSED_OVER_LOGGED} more` : ''}`;
    this.logger.log(
      `vm ${vm.vm_id} (${vm.vm_type}, ${request.ram_mb} MB) ${spawned.replayed ? 'already made for this Idempotency-Key' : 'placed'} on node ${node.node_id}${vm.tenant_id ? ` for tenant ${vm.tenant_id}` : ''}${others}`,
    );
    return { vm, replayed: spawned.replayed };
  }

  private async placeAndHold(request: CreateVmRequest, spawnKey: string): Promise<Dispatch> {
    for (let attempt = 1; ; attempt++) {
      const now = this.clock.now();
      const notBefore = liveSince(now);
      const live = await this.nodes.listLive(notBefore);
      const placement = placeVm(
        request,
        live.map((state) => placementCandidate(state, now)),
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
          {
            holdId,
            ramMb: request.ram_mb,
            requiredFreeMb: placement.required_free_mb,
            nowMs: now,
            // The dispatch cannot take longer than its timeout; the margin covers the rest.
            expiresAtMs: now + this.vmHostSettings.timeoutMs + RAM_HOLD_MARGIN_MS,
            spawnKey,
          },
          notBefore,
        ),
      );
      if (held) return { node, holdId, ownHold: true, passedOver: placement.passed_over };
      if (attempt === PLACEMENT_ATTEMPTS) {
        this.metrics.countPlacement('refused_no_room');
        throw new PlacementRefusedError(
          'no-capacity',
          `node ${node.node_id} lost its room to concurrent creates ${attempt} times; try again (other nodes: ${shortened(placement.passed_over) || 'none'})`,
        );
      }
    }
  }
}
