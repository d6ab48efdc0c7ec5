import { Injectable, Logger, Optional } from '@nestjs/common';
import { randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Clock } from '@app/daemon';
import {
  CreateVmRequest,
  DISPATCH_NODES_TRIED,
  checkPublishedPorts,
  FleetVm,
  IDEMPOTENCY_KEY_TTL_MS,
  SPAWN_DEADLINE_SKEW_MS,
  findEarlierCreate,
  keyHashOf,
  liveSince,
  recordDispatchedVm,
  shownVm,
  copiesHeld,
  copyFieldsOf,
  toRfc3339,
  vmRecordOf,
} from '@app/fleet-domain';
import { FleetMetrics } from '../metrics/fleet-metrics.service';
import { KeyClaims } from '../nodes/key-claims.repository';
import { NodesRepository } from '../nodes/nodes.repository';
import { NodeDrains } from '../nodes/node-drains.repository';
import { TenantQuotas } from '../tenants/tenant-quotas.service';
import { spawnKeyOf } from './spawn-key';
import { Dispatch, PlacementHolds } from './placement-holds';
import { KeyClaimTurns } from './key-claim-turns';
import { VmCreateSettings } from './vm-create.settings';
import { VmHostClient } from './vm-host.client';
import { VmHostClientSettings } from './agent-calls';
import {
  IdempotencyKeyReusedError,
  IdempotencyKeyUnresolvedError,
  PlacementRefusedError,
} from './vms.errors';
import { nodeFailure } from './dispatch-failures';

/** Passed-over nodes a placement log line names. */
const PASSED_OVER_LOGGED = 3;

/** Less time than this left before the create's deadline: no other node is tried. */
const MIN_DISPATCH_TIME_MS = 1_000;

/** `vm-` and 16 hex digits (64 random bits), as agents of ours have always named VMs. */
function mintVmId(): string {
  return `vm-${randomBytes(8).toString('hex')}`;
}

/** A created VM; `replayed`: an earlier create with the same Idempotency-Key made it (200). */
export interface CreatedVm {
  vm: FleetVm;
  replayed: boolean;
}

/**
 * POST /v1/vms: placement, the RAM hold on the chosen node, and the dispatch to its agent, with
 * the Idempotency-Key's claim that makes a retried create answer the VM the first one made.
 */
@Injectable()
export class VmPlacementService {
  private readonly logger = new Logger('Vms');
  /** Keyed creates in progress on this controller, by key hash: a second one waits for the first. */
  private readonly keyedCreates = new Map<string, { spawnKey: string; done: Promise<CreatedVm> }>();
  /** Placement's reads and writes of the nodes: RAM holds, failures, ids answered. */
  private readonly keyClaimTurns: KeyClaimTurns;
  private readonly holds: PlacementHolds;

  constructor(
    private readonly nodes: NodesRepository,
    private readonly keyClaims: KeyClaims,
    private readonly vmHost: VmHostClient,
    private readonly vmHostSettings: VmHostClientSettings,
    private readonly clock: Clock,
    private readonly metrics: FleetMetrics = new FleetMetrics(),
    private readonly createSettings: VmCreateSettings = new VmCreateSettings(),
    /** Absent (a unit test's service): no tenant has a quota. */
    private readonly tenantQuotas?: TenantQuotas,
    /** Absent (a unit test's service): no node is drained. */
    @Optional() drains?: NodeDrains,
  ) {
    this.keyClaimTurns = new KeyClaimTurns(keyClaims, createSettings, vmHostSettings, this.logger);
    this.holds = new PlacementHolds(nodes, clock, metrics, vmHostSettings, this.logger, drains);
  }

  /**
   * Creates the VM, or with an Idempotency-Key, answers the VM an earlier create with the same
   * key and body made (a key reused with another body is refused). Concurrent creates with the
   * same key on this controller share one dispatch; on several controllers, the key's claim
   * lets one of them dispatch (see createClaimed).
   */
  async createVm(request: CreateVmRequest, idempotencyKey?: string): Promise<CreatedVm> {
    checkPublishedPorts(request.ports);
    if (idempotencyKey === undefined) {
      // A key of its own, never repeated: nothing the agent answers makes this a retry.
      const created = await this.placeAndDispatch(request, spawnKeyOf(request), false);
      return { vm: created.vm, replayed: false };
    }
    const spawnKey = spawnKeyOf(request, idempotencyKey);
    const keyHash = keyHashOf(spawnKey);
    const running = this.keyedCreates.get(keyHash);
    if (running) {
      if (running.spawnKey !== spawnKey) throw new IdempotencyKeyReusedError();
      return { vm: (await running.done).vm, replayed: true };
    }
    const done = this.keyClaimTurns.run(spawnKey, () => this.createKeyed(request, spawnKey));
    this.keyedCreates.set(keyHash, { spawnKey, done });
    try {
      return await done;
    } finally {
      this.keyedCreates.delete(keyHash);
    }
  }

  /**
   * A keyed create, holding the key's claim: the controller's own record of the key's dispatch
   * decides (never what a node lists). Its VM listed: that VM. Its dispatch unresolved (the
   * agent never answered, and may still make the VM until the spawn's deadline): that node is
   * asked again with the same key and id, and answers with the VM the key made, not a second
   * one; a node that cannot be asked (silent) is waited for. No record, or one resolved with its
   * VM gone or one whose deadline has passed unanswered: placed anew. Only a create with a record
   * reads every node.
   */
  private async createKeyed(request: CreateVmRequest, spawnKey: string): Promise<CreatedVm> {
    const keyHash = keyHashOf(spawnKey);
    const dispatched = await this.keyClaims.dispatchOf(keyHash);
    if (!dispatched) return this.placeAndDispatch(request, spawnKey, true);
    // Silent nodes too: a VM made for the key on a node that dropped out is still that VM
    // (answered with node_silent_since).
    const stored = await this.nodes.listAll();
    const now = this.clock.now();
    const earlier = findEarlierCreate(stored, now, dispatched);
    if (!earlier) return this.placeAndDispatch(request, spawnKey, true);
    if (earlier.spawn_key !== spawnKey) throw new IdempotencyKeyReusedError();
    if (earlier.kind === 'unresolved') {
      const retryAfterS = Math.max(1, Math.ceil((earlier.until_ms - now) / 1000));
      this.logger.warn(
        `vm create: the first dispatch of an Idempotency-Key to node ${earlier.node_id} is unanswered and the node is silent; answered 503, retry in ${retryAfterS} s`,
      );
      throw new IdempotencyKeyUnresolvedError(earlier.node_id, retryAfterS);
    }
    if (earlier.kind === 'vm') {
      this.logger.log(
        `vm ${earlier.vm.vm_id} on node ${earlier.node.node_id} answered again for a retried create with the same Idempotency-Key`,
      );
      const silentSince =
        earlier.silent_since_wall_ms === undefined
          ? undefined
          : toRfc3339(earlier.silent_since_wall_ms);
      const copy = copyFieldsOf(
        copiesHeld(stored, liveSince(now)),
        earlier.vm,
        earlier.node.node_id,
      );
      return { vm: shownVm(earlier.vm, earlier.node.node_id, silentSince, copy), replayed: true };
    }
    const created = await this.dispatch(
      {
        node: earlier.node,
        // No hold left (it ended at its deadline): the VM is recorded all the same.
        holdId: earlier.hold_id ?? randomUUID(),
        ownHold: false,
        vmId: earlier.vm_id,
      },
      request,
      spawnKey,
      true,
    ).catch((error: unknown) => {
      this.metrics.countPlacement('agent_failed');
      throw error;
    });
    return { vm: created.vm, replayed: true };
  }

  /**
   * Places the VM, holds its RAM on the chosen node (so concurrent creates see it taken),
   * and asks that node's agent to start it. When that agent fails for its own reasons
   * (unreachable, reset, timeout, 5xx), a create without preferred_node goes on to the next
   * best node, up to DISPATCH_NODES_TRIED in all within CREATE_DISPATCH_DEADLINE_MS, with the
   * same spawn key and a vm id of its own; so does one whose agent has no disk room (507) or, without
   * preferred_node, says the VM does not fit (422): such a node is passed over for a while too.
   * `keyed`: the spawn key comes from the client's Idempotency-Key, and the VM made is recorded
   * as the one that key answers.
   */
  private async placeAndDispatch(
    request: CreateVmRequest,
    spawnKey: string,
    keyed: boolean,
  ): Promise<CreatedVm> {
    // Real time, not the clock's: this bounds how long the client waits on the network.
    const deadline = performance.now() + this.createSettings.dispatchDeadlineMs;
    // Its quota counts the copies it will have: the controller's defaults when it names none.
    const counted = request.copies
      ? request
      : { ...request, copies: { ...this.createSettings.copies } };
    const tried: string[] = [];
    let lastFailure: Error | undefined;
    for (;;) {
      // Minted here, never by an agent, and anew for each node asked: a VM id belongs to the
      // node it was dispatched to, and one a refusing node saw (and could list in a heartbeat
      // before refusing) must never be the id another node makes.
      // The tenant's quota is checked in the same step as the hold, under the tenant's claim.
      const vmId = mintVmId();
      const hold = () => this.holds.placeAndHold(counted, spawnKey, vmId, tried);
      const target = await (
        this.tenantQuotas ? this.tenantQuotas.withinQuota(request.tenant_id, counted, hold) : hold()
      ).catch((error: unknown) => {
        if (!(error instanceof PlacementRefusedError)) throw error;
        // No other node can take it: the client hears what went wrong on the one that could.
        if (lastFailure !== undefined) {
          this.metrics.countPlacement('agent_failed');
          throw lastFailure;
        }
        this.metrics.countPlacement(
          error.reason === 'no-capacity' ? 'refused_no_room' : 'refused_unfit',
        );
        throw error;
      });
      // Whole milliseconds of at least 1 (AbortSignal.timeout refuses anything else).
      const timeLeftMs = Math.floor(deadline - performance.now());
      if (lastFailure !== undefined && timeLeftMs < MIN_DISPATCH_TIME_MS) {
        // Placing took what was left (a slow store): the client hears the last node's failure,
        // and the node just chosen is not asked (nor marked) with too little time to answer.
        await this.holds.giveBack(target);
        this.metrics.countPlacement('agent_failed');
        throw lastFailure;
      }
      const timeoutMs = Math.max(1, Math.min(this.vmHostSettings.timeoutMs, timeLeftMs));
      try {
        return await this.dispatch(target, request, spawnKey, keyed, timeoutMs);
      } catch (error) {
        tried.push(target.node.node_id);
        const failure = nodeFailure(error, !request.preferred_node);
        const timeLeft = deadline - performance.now() >= MIN_DISPATCH_TIME_MS;
        const another = !request.preferred_node && tried.length < DISPATCH_NODES_TRIED;
        if (!failure?.retry || !another || !timeLeft) {
          this.metrics.countPlacement('agent_failed');
          throw error;
        }
        lastFailure = error as Error;
        this.logger.warn(
          `vm create: node ${target.node.node_id} failed (${failure.reason}); trying the next best node (${tried.length + 1} of at most ${DISPATCH_NODES_TRIED})`,
        );
      }
    }
  }

  /**
   * Asks the node's agent to start the VM, by a deadline (the end of this wait, by the
   * controller's clock) past which the agent refuses it. A keyed create records the dispatch
   * first, unresolved until that deadline (plus SPAWN_DEADLINE_SKEW_MS for the agent's clock),
   * so a retry never asks another node while this agent may still make the VM. A failed
   * dispatch gives its own hold back. Once the agent accepted, the client gets the VM even if
   * its record cannot be written (the store is down): the node's next heartbeat records it.
   */
  private async dispatch(
    target: Dispatch,
    request: CreateVmRequest,
    spawnKey: string,
    keyed: boolean,
    timeoutMs = this.vmHostSettings.timeoutMs,
  ): Promise<CreatedVm> {
    const { node, holdId, vmId, passedOver = [] } = target;
    const keyHash = keyHashOf(spawnKey);
    if (keyed) {
      const unresolvedUntilMs = this.clock.now() + timeoutMs + SPAWN_DEADLINE_SKEW_MS;
      // Not recorded, not asked: a retry could not know this agent may be making the VM.
      await this.keyClaims
        .recordDispatch(
          keyHash,
          { spawnKey, nodeId: node.node_id, vmId, unresolvedUntilMs },
          IDEMPOTENCY_KEY_TTL_MS,
        )
        .catch(async (storeError: unknown) => {
          await this.holds.giveBack(target);
          throw storeError;
        });
    }
    const deadline = toRfc3339(this.clock.wallNow() + timeoutMs);
    let spawned;
    try {
      spawned = await this.metrics.timeDispatch(
        this.vmHost.spawn(
          node,
          // The fleet's defaults resolved here, not in the request the key's hash covers.
          {
            ...request,
            copies: request.copies ?? { ...this.createSettings.copies },
            vm_id: vmId,
            deadline,
          },
          spawnKey,
          timeoutMs,
        ),
      );
      await this.holds.checkSpawnedId(node, vmId, spawned);
    } catch (error) {
      this.logger.warn(`spawn on node ${node.node_id} failed: ${(error as Error).message}`);
      const failure = nodeFailure(error, !request.preferred_node);
      if (failure !== undefined && !failure.notTheNodes) {
        await this.holds.noteNodeFailure(node.node_id, failure.reason);
      }
      // An agent that got the request may still be making the VM (a timeout, a reset): its
      // RAM stays held until the hold's deadline or the heartbeat that lists it, and the key's
      // record stays unresolved until the spawn's deadline.
      if (!failure?.mayHaveMadeIt) {
        await this.holds.giveBack(target);
        if (keyed) await this.forgetKeyDispatch(keyHash, node.node_id, vmId);
      }
      throw error;
    }
    // The agent keeps the tenant; an agent that does not echo it still gets it recorded.
    const record = vmRecordOf({
      ...spawned.vm,
      tenant_id: spawned.vm.tenant_id ?? request.tenant_id ?? null,
    });
    // A VM just made has no copy yet: shown as such when its create asked for copies.
    const vm = shownVm(
      record,
      node.node_id,
      undefined,
      request.copies === undefined ? undefined : { copied_at: null, copy_node_id: null },
    );
    try {
      await this.nodes.update(
        node.node_id,
        // With the disk its quota counts, until its heartbeat reports it.
        recordDispatchedVm(holdId, {
          ...record,
          idempotency_key: spawnKey,
          ...(request.disk_gb === undefined ? {} : { disk_gb: request.disk_gb }),
        }),
      );
    } catch (error) {
      this.logger.warn(
        `vm ${vm.vm_id} started on node ${node.node_id} but could not be recorded (${(error as Error).message}); answered anyway, the node's next heartbeat records it`,
      );
    }
    if (keyed) await this.recordKeyDispatch(spawnKey, node.node_id, vm.vm_id);
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

  /** Records the VM a keyed create's agent accepted (see KeyClaims.recordDispatch); a store error logs. */
  private async recordKeyDispatch(spawnKey: string, nodeId: string, vmId: string): Promise<void> {
    await this.keyClaims
      .recordDispatch(keyHashOf(spawnKey), { spawnKey, nodeId, vmId }, IDEMPOTENCY_KEY_TTL_MS)
      .catch((storeError: Error) =>
        this.logger.warn(
          `vm ${vmId} on node ${nodeId}: its Idempotency-Key could not be recorded (${storeError.message}); a retry with the key waits until the spawn's deadline, then may make another VM`,
        ),
      );
  }

  /** The agent made nothing: a retry with the key places anew at once; a store error logs. */
  private async forgetKeyDispatch(keyHash: string, nodeId: string, vmId: string): Promise<void> {
    await this.keyClaims
      .forgetDispatch(keyHash, vmId)
      .catch((storeError: Error) =>
        this.logger.warn(
          `vm ${vmId} on node ${nodeId}: the refused dispatch of its Idempotency-Key stays recorded (${storeError.message}); a retry with the key waits until the spawn's deadline`,
        ),
      );
  }
}
