import { Injectable, Logger, Optional } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { committedRamMb, rfc3339ToEpochNanos } from '@app/fleet-domain';
import { VmHostConfig } from '../config/vm-host.config';
import { HostFactsService } from '../host-facts/host-facts.service';
import { HostMetrics } from '../metrics/host-metrics.service';
import { ReplicasService } from '../replicas/replicas.service';
import { ReplicaPrune } from '../replicas/replica-prune';
import { NodeVmsSource } from '../vms/node-vms.source';
import { VmFencing } from '../vms/fencing/vm-fencing.service';
import { RoutingMesh } from '../mesh/routing-mesh';
import { FleetClient, HeartbeatAnswer, HeartbeatBody } from './fleet.client';

const NS_PER_MS = 1_000_000n;
const NS_PER_S = 1_000_000_000n;
/**
 * How far past this machine's clock a stamp the controller holds may carry our stamps: a clock
 * that went back minutes or hours, not a stamp from another century.
 */
const MAX_STAMP_CATCH_UP_NS = 24n * 3_600n * NS_PER_S;

/** Builds and sends one heartbeat. */
@Injectable()
export class HeartbeatService {
  private readonly logger = new Logger('Heartbeat');
  /** The last stamp sent, in nanoseconds since the epoch. */
  private lastStampNs = 0n;
  /** Heartbeats the controller ignored since it last took one (0: it takes them). */
  private ignoredInARow = 0;

  constructor(
    private readonly config: VmHostConfig,
    private readonly hostFacts: HostFactsService,
    private readonly vms: NodeVmsSource,
    private readonly fleet: FleetClient,
    private readonly clock: Clock,
    private readonly metrics: HostMetrics = new HostMetrics(),
    @Optional() private readonly replicas?: ReplicasService,
    @Optional() private readonly fencing?: VmFencing,
    @Optional() private readonly prune?: ReplicaPrune,
    @Optional() private readonly mesh?: RoutingMesh,
  ) {}

  /** The controller that answered last, as logs name it. */
  get endpointForLogs(): string {
    return this.fleet.endpointForLogs;
  }

  /** `ram_used_mb` is the RAM committed to VMs (committedRamMb), not the RAM they touched. */
  async compose(): Promise<HeartbeatBody> {
    const [facts, report, replicas] = await Promise.all([
      this.hostFacts.read(),
      this.vms.report(),
      this.replicas?.replicas().catch(() => []) ?? Promise.resolve([]),
    ]);
    return {
      node_id: this.config.nodeId,
      wg_ip: this.config.wgIp,
      spawn_port: this.config.spawnPort,
      reserved: this.config.reserved,
      ...facts,
      ram_used_mb: committedRamMb(
        { totalMb: facts.ram_total_mb, usedMb: facts.ram_used_mb },
        report.committed,
      ),
      vms: report.vms,
      ...(report.diskRoom ? { disk_room: report.diskRoom } : {}),
      ...(replicas.length > 0 ? { replicas } : {}),
      ...fencedOf(this.fencing),
      timestamp_utc: this.stamp(),
    };
  }

  /**
   * Composes, then sends within `timeoutMs` (or until `shutdown`): the time only starts once
   * the body is ready, so slow VM inspection never leaves the request no time at all.
   *
   * A heartbeat the controller ignores (it holds a later stamp of this boot: this agent was
   * restarted after the clock went back) is one warning per episode and one count each; the
   * stamps then continue after the controller's, and the same heartbeat goes again at once,
   * so the node stays listed and current.
   */
  async send(timeoutMs: number, shutdown?: AbortSignal): Promise<void> {
    const body = await this.compose();
    this.metrics.observeRam(body);
    // The lease a renewing answer grants runs from the send, on the lease's clock (fencing/).
    const sentAtMs = this.fencing?.now() ?? 0;
    const answer = await this.post(body, timeoutMs, shutdown);
    if (answer.superseded_vm_ids?.length) await this.vms.supersede(answer.superseded_vm_ids);
    await this.fencing?.answered(sentAtMs, answer);
    if (answer.wanted_replica_vm_ids && body.replicas) {
      await this.prune?.judge(
        body.replicas.map((replica) => replica.vm_id),
        answer.wanted_replica_vm_ids,
      );
    }
    if (answer.accepted) {
      // Absent: no route (or a controller before the mesh): every listener closes.
      await this.mesh?.learn(answer.mesh_routes ?? [], body.vms);
      return this.taken();
    }
    this.ignored(body, answer);
    if (!this.stampAfter(answer.stored_timestamp_utc)) return;
    const again = { ...body, timestamp_utc: this.stamp() };
    const againAtMs = this.fencing?.now() ?? 0;
    const second = await this.post(again, timeoutMs, shutdown);
    await this.fencing?.answered(againAtMs, second);
    if (second.accepted) {
      await this.mesh?.learn(second.mesh_routes ?? [], again.vms);
      this.taken();
    } else this.ignored(again, second);
  }

  private post(
    body: HeartbeatBody,
    timeoutMs: number,
    shutdown?: AbortSignal,
  ): Promise<HeartbeatAnswer> {
    const timeout = AbortSignal.timeout(timeoutMs);
    return this.fleet.sendHeartbeat(
      body,
      shutdown ? AbortSignal.any([timeout, shutdown]) : timeout,
    );
  }

  private taken(): void {
    if (this.ignoredInARow > 0) {
      this.logger.log(
        `node ${this.config.nodeId}: the controller takes heartbeats again (after ${this.ignoredInARow} ignored)`,
      );
    }
    this.ignoredInARow = 0;
  }

  private ignored(body: HeartbeatBody, answer: HeartbeatAnswer): void {
    this.metrics.countHeartbeatIgnored();
    if (this.ignoredInARow++ > 0) return;
    const stored = answer.stored_timestamp_utc ?? 'unknown';
    this.logger.warn(
      `node ${this.config.nodeId}: the controller answered 200 but ignored the heartbeat stamped ${body.timestamp_utc}: it holds one of this boot (${body.boot_id}) stamped later, ${stored}. This machine's clock went back, or another agent sends as this node; stamping after it from now on (warned once until heartbeats are taken again)`,
    );
  }

  /**
   * Makes the next stamps come after `storedUtc`, unless it is unreadable or further ahead of
   * this machine's clock than a clock that went back explains. False when they already did or
   * it is not followed.
   */
  private stampAfter(storedUtc: string | undefined): boolean {
    const storedNs = storedUtc === undefined ? null : rfc3339ToEpochNanos(storedUtc);
    if (storedNs === null || storedNs < this.lastStampNs) return false;
    if (storedNs - nowNs(this.clock) > MAX_STAMP_CATCH_UP_NS) return false;
    this.lastStampNs = storedNs;
    return true;
  }

  /**
   * The clock's time, but always after the previous stamp: the controller drops a heartbeat
   * stamped before the last one of the same boot, so a wall clock set back must not silence us.
   */
  private stamp(): string {
    this.lastStampNs = bigMax(nowNs(this.clock), this.lastStampNs + 1n);
    return rfc3339Nanos(this.lastStampNs);
  }
}

/** The heartbeat's fenced_vm_ids: present only while some VM is fenced. */
function fencedOf(fencing: VmFencing | undefined): Pick<HeartbeatBody, 'fenced_vm_ids'> {
  const ids = fencing?.fencedVmIds() ?? [];
  return ids.length > 0 ? { fenced_vm_ids: ids } : {};
}

function nowNs(clock: Clock): bigint {
  return BigInt(Math.floor(clock.wallNow())) * NS_PER_MS;
}

function bigMax(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

/** RFC 3339 with a nanosecond fraction, as the original agent stamps heartbeats. */
function rfc3339Nanos(epochNs: bigint): string {
  const seconds = new Date(Number(epochNs / NS_PER_S) * 1000).toISOString().slice(0, 19);
  return `${seconds}.${(epochNs % NS_PER_S).toString().padStart(9, '0')}Z`;
}
