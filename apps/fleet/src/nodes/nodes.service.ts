import { Injectable, Logger } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { Clock } from '@app/daemon';
import {
  FleetStatus,
  NodeHeartbeat,
  NodeRecord,
  acceptHeartbeat,
  endExpiredHolds,
  liveSince,
  toRfc3339,
} from '@app/fleet-domain';
import { FleetMetrics } from '../metrics/fleet-metrics.service';
import { NodeNotFoundError } from './nodes.errors';
import { NodesRepository } from './nodes.repository';

/** Nodes named one by one per sweep; beyond that, one summary line. */
const DROP_LINES_PER_SWEEP = 20;

@Injectable()
export class NodesService {
  private readonly logger = new Logger('Nodes');

  constructor(
    private readonly nodes: NodesRepository,
    private readonly clock: Clock,
    private readonly metrics: FleetMetrics = new FleetMetrics(),
  ) {}

  /** Replaces the node's record with the heartbeat; the first one enrolls the node. */
  async acceptHeartbeat(heartbeat: NodeHeartbeat): Promise<void> {
    const verdict = await this.nodes.update(
      heartbeat.node_id,
      acceptHeartbeat(heartbeat, this.clock.now()),
    );
    this.metrics.countHeartbeat(verdict.kind);
    const id = heartbeat.node_id;
    switch (verdict.kind) {
      case 'joined':
        this.logger.log(
          `node ${id} joined from ${heartbeat.wg_ip} (host ${heartbeat.hostname}, boot ${heartbeat.boot_id})`,
        );
        break;
      case 'taken-over': {
        const was = verdict.previous;
        this.logger.log(
          `node ${id} taken over: now ${heartbeat.wg_ip} (host ${heartbeat.hostname}, boot ${heartbeat.boot_id}), was ${was.wg_ip} (host ${was.hostname}, boot ${was.boot_id})`,
        );
        break;
      }
      case 'out-of-order':
        this.logger.warn(
          `node ${id}: ignored heartbeat stamped ${heartbeat.timestamp_utc}, older than the stored ${verdict.stored_timestamp_utc} of boot ${heartbeat.boot_id}`,
        );
        break;
      case 'refreshed':
        break;
    }
  }

  async listNodes(): Promise<NodeRecord[]> {
    const records = await this.nodes.listLiveRecords(liveSince(this.clock.now()));
    return records.sort(byNodeId);
  }

  async getNode(nodeId: string): Promise<NodeRecord> {
    const state = await this.nodes.findLive(nodeId, liveSince(this.clock.now()));
    if (!state) throw new NodeNotFoundError(nodeId);
    return state.record;
  }

  async fleetStatus(): Promise<FleetStatus> {
    const now = this.clock.now();
    const records = await this.nodes.listLiveRecords(liveSince(now));
    return {
      nodes: records.sort(byNodeId),
      last_updated: toRfc3339(now),
    };
  }

  /**
   * Drops every node silent for more than 30 s, one log line each; when a whole rack goes
   * silent at once, the first few are named and one summary line says how many went.
   */
  async dropStaleNodes(): Promise<void> {
    const startedAt = performance.now();
    const now = this.clock.now();
    const dropped = await this.nodes.dropStale(liveSince(now));
    for (const state of dropped.slice(0, DROP_LINES_PER_SWEEP)) {
      const silentS = ((now - state.received_at_ms) / 1000).toFixed(1);
      this.logger.log(`node ${state.node_id} dropped after ${silentS} s without a heartbeat`);
    }
    this.metrics.observeSweep((performance.now() - startedAt) / 1000, dropped.length);
    if (dropped.length > DROP_LINES_PER_SWEEP) {
      const tookMs = (performance.now() - startedAt).toFixed(1);
      this.logger.log(
        `dropped ${dropped.length} nodes silent for more than 30 s in one sweep (${tookMs} ms); ${dropped.length - DROP_LINES_PER_SWEEP} not named above`,
      );
    }
  }

  /**
   * Ends every RAM hold past its deadline (a dispatch that never came back, a controller that
   * died mid-dispatch): one log line each, naming the node and the RAM given back.
   */
  async endExpiredHolds(): Promise<void> {
    const now = this.clock.now();
    for (const nodeId of await this.nodes.nodesWithExpiredHolds(now)) {
      const ended = await this.nodes.update(nodeId, endExpiredHolds(now));
      for (const { hold } of ended) {
        const agoS = ((now - hold.expires_at_ms) / 1000).toFixed(1);
        this.logger.warn(
          `node ${nodeId}: RAM hold of ${hold.ram_mb} MB${hold.vm_id ? ` for vm ${hold.vm_id}` : ''} ended at its deadline (${agoS} s ago) before any heartbeat listed the VM`,
        );
      }
    }
  }
}

function byNodeId(a: NodeRecord, b: NodeRecord): number {
  return a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0;
}
