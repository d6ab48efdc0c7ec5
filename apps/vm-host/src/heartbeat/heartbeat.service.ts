import { Injectable } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { committedRamMb } from '@app/fleet-domain';
import { VmHostConfig } from '../config/vm-host.config';
import { HostFactsService } from '../host-facts/host-facts.service';
import { HostMetrics } from '../metrics/host-metrics.service';
import { NodeVmsSource } from '../vms/node-vms.source';
import { FleetClient, HeartbeatBody } from './fleet.client';

const NS_PER_MS = 1_000_000n;
const NS_PER_S = 1_000_000_000n;

/** Builds and sends one heartbeat. */
@Injectable()
export class HeartbeatService {
  /** The last stamp sent, in nanoseconds since the epoch. */
  private lastStampNs = 0n;

  constructor(
    private readonly config: VmHostConfig,
    private readonly hostFacts: HostFactsService,
    private readonly vms: NodeVmsSource,
    private readonly fleet: FleetClient,
    private readonly clock: Clock,
    private readonly metrics: HostMetrics = new HostMetrics(),
  ) {}

  /** `ram_used_mb` is the RAM committed to VMs (committedRamMb), not the RAM they touched. */
  async compose(): Promise<HeartbeatBody> {
    const [facts, report] = await Promise.all([this.hostFacts.read(), this.vms.report()]);
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
      timestamp_utc: this.stamp(),
    };
  }

  /**
   * Composes, then sends within `timeoutMs` (or until `shutdown`): the time only starts once
   * the body is ready, so slow VM inspection never leaves the request no time at all.
   */
  async send(timeoutMs: number, shutdown?: AbortSignal): Promise<void> {
    const body = await this.compose();
    this.metrics.observeRam(body);
    const timeout = AbortSignal.timeout(timeoutMs);
    await this.fleet.sendHeartbeat(body, shutdown ? AbortSignal.any([timeout, shutdown]) : timeout);
  }

  /**
   * The clock's time, but always after the previous stamp: the controller drops a heartbeat
   * stamped before the last one of the same boot, so a wall clock set back must not silence us.
   */
  private stamp(): string {
    this.lastStampNs = bigMax(
      BigInt(Math.floor(this.clock.now())) * NS_PER_MS,
      this.lastStampNs + 1n,
    );
    return rfc3339Nanos(this.lastStampNs);
  }
}

function bigMax(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

/** RFC 3339 with a nanosecond fraction, as the original agent stamps heartbeats. */
function rfc3339Nanos(epochNs: bigint): string {
  const seconds = new Date(Number(epochNs / NS_PER_S) * 1000).toISOString().slice(0, 19);
  return `${seconds}.${(epochNs % NS_PER_S).toString().padStart(9, '0')}Z`;
}
