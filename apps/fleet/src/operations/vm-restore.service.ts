import { Injectable, Logger, Optional } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { Clock } from '@app/daemon';
import {
  AgentRestoreRequest,
  CopyPolicy,
  HeartbeatVm,
  HostPort,
  NodeState,
  RAM_HOLD_MARGIN_MS,
  RestoreSpec,
  RestoreVmRequest,
  RestoredVm,
  SSH_GUEST_PORT,
  countedDiskGb,
  forgetSilentVm,
  isLive,
  listedVms,
  liveSince,
  placeVm,
  placementCandidate,
  planRestore,
  recordDispatchedVm,
  restoreSpawnKey,
  shownVm,
  toRfc3339,
  vmRecordOf,
} from '@app/fleet-domain';
import { KeyClaims } from '../nodes/key-claims.repository';
import { NodesRepository } from '../nodes/nodes.repository';
import { VmMoves } from '../nodes/vm-moves.repository';
import { NodeDrains } from '../nodes/node-drains.repository';
import { drainReasons, withDrainReason } from '../nodes/drained-nodes';
import { TenantQuotas } from '../tenants/tenant-quotas.service';
import { VmHostClient } from '../vms/vm-host.client';
import { AgentAnswer, AgentCallError } from '../vms/agent-calls';
import { PlacementRefusedError } from '../vms/vms.errors';
import { giveBackHold, holdRamOnTarget } from '../vms/target-ram-hold';
import { VmAgentFailedError } from './vm-operations.errors';
import { VmRestoreRefusedError } from './vm-restore.errors';
import { RestorePulls, newestInTime, remoteIsNewer } from './restore-pull';
import { chooseRestorePoint } from './restore-point';
import { planAwayFromDrained } from './restore-away-from-drained';

/**
 * How long the controller waits for an agent's restore: it answers once the whole disk is
 * converted (a 20 GiB disk from a USB stick takes minutes), so far longer than an action.
 */
export const RESTORE_AGENT_TIMEOUT_MS = 30 * 60_000;

/** How long a restore of one VM keeps others of the same VM out (longer than it can take). */
const RESTORE_CLAIM_MS = RESTORE_AGENT_TIMEOUT_MS + RAM_HOLD_MARGIN_MS;

/** The VM to make, from the controller's last record of it or from its copy's manifest. */
type VmSpec = Omit<RestoreSpec, 'tenant_id'> & {
  tenant_id: string | null;
  /** The copy policy its agent last reported (absent: none, an agent before copies). */
  copies?: CopyPolicy;
};

/**
 * POST /v1/vms/{vm_id}/restore on the operations listener: the rules (planRestore), the point
 * read on the target's agent, the RAM held there as for a create, the agent's restore, then
 * the VM marked as moved (VmMoves) so its old node, if it ever comes back, is told it is
 * superseded, and its old record forgotten so it is listed on its new node only.
 */
@Injectable()
export class VmRestoreService {
  private readonly logger = new Logger('Restore');

  constructor(
    private readonly nodes: NodesRepository,
    private readonly keyClaims: KeyClaims,
    private readonly vmMoves: VmMoves,
    private readonly vmHost: VmHostClient,
    private readonly clock: Clock,
    private readonly pulls: RestorePulls,
    /** Absent (a unit test's service): no tenant has a quota. */
    private readonly tenantQuotas?: TenantQuotas,
    /** Absent (a unit test's service): no node is drained. */
    @Optional() private readonly drains?: NodeDrains,
  ) {}

  async restore(vmId: string, request: RestoreVmRequest): Promise<RestoredVm> {
    // The claim's key is the restore's RAM hold's spawn key (keepsMovedVm reads it).
    const claim = await this.keyClaims.claim(
      restoreSpawnKey(vmId),
      restoreSpawnKey(vmId),
      RESTORE_CLAIM_MS,
    );
    if (claim.kind !== 'own') {
      throw new VmRestoreRefusedError(409, `vm ${vmId}: another restore of it is under way`);
    }
    try {
      return await this.restoreClaimed(vmId, request);
    } finally {
      await this.keyClaims.release(claim).catch((error: Error) => {
        this.logger.warn(
          `vm ${vmId}: restore claim not released (${error.message}); it ends by itself`,
        );
      });
    }
  }

  private async restoreClaimed(vmId: string, request: RestoreVmRequest): Promise<RestoredVm> {
    const now = this.clock.now();
    const notBefore = liveSince(now);
    const all = await this.nodes.listAll();
    const live = all.filter((node) => isLive(node, notBefore));
    const listed = listedVms(all, notBefore).find(({ vm }) => vm.vm_id === vmId);
    const asNew = request.as_new === true;
    const asked = { vmId, from: request.from, to: request.to, asNew, known: listed !== undefined };
    const first = planRestore(asked, live);
    if (first.kind === 'refused') throw new VmRestoreRefusedError(first.status, first.message);
    const drained = await drainReasons(this.drains);
    const plan = planAwayFromDrained(first, asked, live, drained, listed?.vm.ram_alloc_mb, now);
    if (plan.kind === 'refused') throw new VmRestoreRefusedError(plan.status, plan.message);
    const target = live.find((node) => node.node_id === plan.to)!;
    const points = await this.ask(vmId, target, 'restore points read', () =>
      this.vmHost.restorePoints(target, vmId),
    );
    // The copy held by another node: pulled by the target when asked for, or when newer.
    const holder = plan.holder ? live.find((node) => node.node_id === plan.holder) : undefined;
    const held = holder
      ? await this.ask(vmId, holder, 'restore points read', () =>
          this.vmHost.restorePoints(holder, vmId),
        )
      : undefined;
    const remote = held && newestInTime(held.points, request.at, 'replica');
    const local =
      plan.kind === 'replica' && holder
        ? undefined
        : chooseRestorePoint(
            vmId,
            target,
            plan,
            points,
            request,
            listed !== undefined,
            live,
            !!remote,
          );
    const pulled = holder && remote && remoteIsNewer(local, remote) ? remote : undefined;
    if (plan.kind === 'replica' && holder && !pulled) {
      throw new VmRestoreRefusedError(
        422,
        `from: node ${holder.node_id} holds no readable copy of vm ${vmId}${request.at ? ` taken at or before ${request.at}` : ''}`,
      );
    }
    const point = (pulled ?? local)!;
    const spec = specOf(listed?.vm, (pulled ? held?.spec : points.spec) ?? points.spec);
    if (!spec) {
      throw new VmRestoreRefusedError(
        422,
        `vm ${vmId}: neither the controller's record of it nor the manifest of its copy on node ${target.node_id} describes it (type, RAM, vCPUs); nothing was made`,
      );
    }
    const newId = asNew ? `vm-${randomBytes(8).toString('hex')}` : vmId;
    // A new VM, or one the fleet no longer counts (forgotten), adds to its tenant's use: checked
    // against its quota in the same step as the hold, as a create is. A VM still listed is
    // counted already (its hold names it, so it is not counted twice).
    const counted = !asNew && listed !== undefined;
    const hold = () => this.holdRam(target, spec, newId, !counted);
    const holdId =
      this.tenantQuotas && spec.tenant_id && !counted
        ? await this.tenantQuotas.withinQuota(
            spec.tenant_id,
            // A copy whose size its manifest does not give counts no disk, as a VM reported without one.
            {
              ram_mb: spec.ram_mb,
              vcpu_count: spec.vcpu_count,
              disk_gb: spec.disk_gb ?? 0,
            },
            hold,
          )
        : await hold();
    const agentRequest: AgentRestoreRequest = {
      vm_id: newId,
      vm_type: spec.vm_type,
      ram_mb: spec.ram_mb,
      vcpu_count: spec.vcpu_count,
      tenant_id: spec.tenant_id,
      ports: withSshFirst(spec.ports),
      keep_host_ports: !asNew,
      issued_at: toRfc3339(this.clock.wallNow()),
      ...(spec.disk_gb === undefined ? {} : { disk_gb: spec.disk_gb }),
      ...(spec.copies === undefined ? {} : { copies: spec.copies }),
      source: {
        ...(point.source === 'replica' ? { replica: true } : { backup_id: point.backup_id }),
        vm_id: vmId,
        ...(pulled && holder
          ? { pull: this.pulls.pullFrom(vmId, holder, target, pulled, !asNew) }
          : {}),
      },
    };
    let restored;
    try {
      restored = await this.ask(vmId, target, 'restore', () =>
        this.vmHost.restore(target, agentRequest, RESTORE_AGENT_TIMEOUT_MS),
      );
      if (restored.vm.vm_id !== newId) {
        this.logger.warn(
          `node ${target.node_id}: restore of vm ${newId} answered vm ${restored.vm.vm_id}; nothing recorded`,
        );
        throw new VmAgentFailedError(vmId, target.node_id, 'restore', 'failed');
      }
    } catch (error) {
      const cutOff = error instanceof VmAgentFailedError && error.reason === 'unreachable';
      // Cut off mid-answer, the agent may still be making it: its RAM stays held until the
      // hold's deadline or the heartbeat that lists it.
      if (!cutOff) await this.giveBack(target, holdId);
      throw error;
    }
    const replaced = asNew ? null : await this.markMoved(vmId, target, listed?.node);
    const record = vmRecordOf({
      ...restored.vm,
      tenant_id: restored.vm.tenant_id ?? spec.tenant_id,
    });
    await this.nodes
      .update(target.node_id, recordDispatchedVm(holdId, record))
      .catch((error: Error) =>
        this.logger.warn(
          `vm ${newId} restored on node ${target.node_id} but not recorded (${error.message}); its node's next heartbeat lists it`,
        ),
      );
    this.logger.log(
      `vm ${newId}${asNew ? ` (a new VM from vm ${vmId})` : ''} restored on node ${target.node_id} from ${point.source} ${point.backup_id}${pulled ? ` pulled from node ${holder!.node_id}` : ''} taken ${point.taken_at}${replaced ? `; node ${replaced} will not run it again (superseded when it comes back)` : ''}; ports ${record.host_ports.map((port) => `${port.host_port}->${port.guest_port}/${port.protocol}`).join(' ')}`,
    );
    return { vm: shownVm(record, target.node_id), point, replaced_node_id: replaced };
  }

  /**
   * The VM's RAM held on the target as a create's is (placement with preferred_node).
   * `counts`: the hold names the VM and its tenant, so the tenant's use counts it until a
   * heartbeat lists it (not for a VM still listed elsewhere: that record counts it already, and
   * its id on a hold here would be one VM on two nodes).
   */
  private async holdRam(
    target: NodeState,
    spec: VmSpec,
    vmId: string,
    counts: boolean,
  ): Promise<string> {
    const now = this.clock.now();
    const placement = placeVm(
      {
        ram_mb: spec.ram_mb,
        prefer_kvm: false,
        preferred_node: target.node_id,
      },
      [withDrainReason(placementCandidate(target, now), await drainReasons(this.drains))],
    );
    if (placement.kind !== 'placed') {
      throw new PlacementRefusedError(placement.kind, placement.message);
    }
    return holdRamOnTarget(this.nodes, now, target, {
      ramMb: spec.ram_mb,
      requiredFreeMb: placement.required_free_mb,
      agentTimeoutMs: RESTORE_AGENT_TIMEOUT_MS,
      spawnKey: restoreSpawnKey(vmId),
      ...(counts ? { vmId } : {}),
      ...(counts && spec.tenant_id
        ? {
            tenant: {
              tenant_id: spec.tenant_id,
              vcpu_count: spec.vcpu_count,
              // Its copies (none yet: a restore sets no policy) counted in, as a create's.
              ...(spec.disk_gb !== undefined ? { disk_gb: countedDiskGb(spec.disk_gb) } : {}),
            },
          }
        : {}),
    });
  }

  private async giveBack(target: NodeState, holdId: string): Promise<void> {
    await giveBackHold(this.nodes, this.logger, target, holdId);
  }

  /**
   * The VM runs on `target` now: recorded as moved (a heartbeat of any other node listing it is
   * answered superseded_vm_ids), and its old record forgotten. Returns the node it was listed on.
   */
  private async markMoved(
    vmId: string,
    target: NodeState,
    previous: NodeState | undefined,
  ): Promise<string | null> {
    await this.vmMoves
      .record(vmId, { nodeId: target.node_id, atWallMs: this.clock.wallNow() })
      .catch((error: Error) =>
        this.logger.error(
          `vm ${vmId}: restored on node ${target.node_id} but its move not recorded (${error.message}): its old node, should it come back, is not told to set its copy aside`,
        ),
      );
    if (!previous || previous.node_id === target.node_id) return previous?.node_id ?? null;
    await this.nodes
      .update(previous.node_id, forgetSilentVm(vmId, liveSince(this.clock.now())))
      .catch((error: Error) =>
        this.logger.warn(
          `vm ${vmId}: old record on node ${previous.node_id} kept (${error.message})`,
        ),
      );
    return previous.node_id;
  }

  /** An agent's answer, or its refusal / failure in the controller's own words. */
  private async ask<T>(
    vmId: string,
    node: NodeState,
    action: 'restore' | 'restore points read',
    send: () => Promise<AgentAnswer<T>>,
  ): Promise<T> {
    let answer: AgentAnswer<T>;
    try {
      answer = await send();
    } catch (error) {
      if (!(error instanceof AgentCallError)) throw error;
      this.logger.warn(`vm ${vmId}: ${action} on node ${node.node_id} failed: ${error.message}`);
      throw new VmAgentFailedError(vmId, node.node_id, action, error.reason);
    }
    if (answer.kind === 'answered') return answer.value;
    if (answer.status === 409) {
      throw new VmRestoreRefusedError(
        409,
        `vm ${vmId}: node ${node.node_id} already has a VM with this id (nothing was made)`,
      );
    }
    if (answer.status === 422 && answer.message !== undefined) {
      throw new VmRestoreRefusedError(
        422,
        `node ${node.node_id} refused the restore: ${answer.message}`,
      );
    }
    this.logger.warn(`vm ${vmId}: node ${node.node_id} answered the ${action} ${answer.status}`);
    throw new VmAgentFailedError(vmId, node.node_id, action, 'failed');
  }
}

/**
 * The VM as the controller last recorded it (its type, RAM, vCPUs, tenant, ports), with the
 * manifest for what the record lacks (its disk size; its ports when the record has none);
 * the manifest alone for a VM the controller has no record of.
 */
function specOf(record: HeartbeatVm | undefined, manifest: RestoreSpec | null): VmSpec | undefined {
  if (!record) return manifest ?? undefined;
  const ports = (record.host_ports ?? []).length > 0 ? record.host_ports : (manifest?.ports ?? []);
  return {
    vm_type: record.vm_type,
    ram_mb: record.ram_alloc_mb,
    vcpu_count: record.vcpu_count,
    tenant_id: record.tenant_id ?? null,
    ports,
    ...(manifest?.disk_gb === undefined ? {} : { disk_gb: manifest.disk_gb }),
    ...(record.copies
      ? { copies: { count: record.copies.count, every_s: record.copies.every_s } }
      : {}),
  };
}

/** SSH (guest 22/tcp) first, as every VM has it; a host port below 1024 is never kept. */
function withSshFirst(ports: readonly HostPort[]): HostPort[] {
  const ssh = ports.find((port) => port.guest_port === SSH_GUEST_PORT && port.protocol === 'tcp');
  const others = ports.filter((port) => port !== ssh);
  return [ssh ?? { host_port: 1, guest_port: SSH_GUEST_PORT, protocol: 'tcp' }, ...others].map(
    ({ host_port, guest_port, protocol }) => ({ host_port, guest_port, protocol }),
  );
}
