import { Injectable, Logger } from '@nestjs/common';
import {
  Clock,
  FleetStatus,
  NodeHeartbeat,
  NodeRecord,
  liveSince,
  toNodeRecord,
  toRfc3339,
} from '@app/fleet-domain';
import { NodesRepository } from './nodes.repository';

@Injectable()
export class NodesService {
  private readonly logger = new Logger('Nodes');

  constructor(
    private readonly nodes: NodesRepository,
    private readonly clock: Clock,
  ) {}

  /** Replaces the node's record with the heartbeat; the first one enrolls the node. */
  async acceptHeartbeat(heartbeat: NodeHeartbeat): Promise<void> {
    const verdict = await this.nodes.applyHeartbeat(heartbeat, this.clock.now());
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
    const live = await this.nodes.listLive(liveSince(this.clock.now()));
    return live.map(toNodeRecord).sort(byNodeId);
  }

  async findNode(nodeId: string): Promise<NodeRecord | undefined> {
    const state = await this.nodes.findLive(nodeId, liveSince(this.clock.now()));
    return state && toNodeRecord(state);
  }

  async fleetStatus(): Promise<FleetStatus> {
    const now = this.clock.now();
    const live = await this.nodes.listLive(liveSince(now));
    return { nodes: live.map(toNodeRecord).sort(byNodeId), last_updated: toRfc3339(now) };
  }

  /** Drops every node silent for more than 30 s, one log line each. */
  async dropStaleNodes(): Promise<void> {
    const now = this.clock.now();
    const dropped = await this.nodes.dropStale(liveSince(now));
    for (const state of dropped) {
      const silentS = ((now - state.received_at_ms) / 1000).toFixed(1);
      this.logger.log(`node ${state.node_id} dropped after ${silentS} s without a heartbeat`);
    }
  }
}

function byNodeId(a: NodeRecord, b: NodeRecord): number {
  return a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0;
}
