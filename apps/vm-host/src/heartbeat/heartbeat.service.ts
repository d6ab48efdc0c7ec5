import { Injectable } from '@nestjs/common';
import { VmHostConfig } from '../config/vm-host.config';
import { FleetClient, HeartbeatBody } from './fleet.client';
import { HostFactsService } from './host-facts.service';
import { NodeVmsSource } from './node-vms.source';

/** Builds and sends one heartbeat. */
@Injectable()
export class HeartbeatService {
  private readonly fleet: FleetClient;

  constructor(
    private readonly config: VmHostConfig,
    private readonly hostFacts: HostFactsService,
    private readonly vms: NodeVmsSource,
  ) {
    this.fleet = new FleetClient(config.fleetEndpoint);
  }

  async compose(): Promise<HeartbeatBody> {
    const [facts, vms] = await Promise.all([this.hostFacts.read(), this.vms.list()]);
    return {
      node_id: this.config.nodeId,
      wg_ip: this.config.wgIp,
      spawn_port: this.config.spawnPort,
      reserved: this.config.reserved,
      ...facts,
      vms,
      timestamp_utc: nowRfc3339Nanos(),
    };
  }

  async send(signal: AbortSignal): Promise<void> {
    await this.fleet.sendHeartbeat(await this.compose(), signal);
  }
}

/**
 * RFC 3339 with a nanosecond fraction, as the original agent stamps heartbeats. Wall-clock
 * time at start plus a monotonic clock since, so stamps of one process never go backwards.
 */
const startEpochNs = BigInt(Date.now()) * 1_000_000n;
const startMonotonicNs = process.hrtime.bigint();

export function nowRfc3339Nanos(): string {
  const epochNs = startEpochNs + (process.hrtime.bigint() - startMonotonicNs);
  const seconds = new Date(Number(epochNs / 1_000_000_000n) * 1000).toISOString().slice(0, 19);
  return `${seconds}.${(epochNs % 1_000_000_000n).toString().padStart(9, '0')}Z`;
}
