import { DrainedVm } from '@app/fleet-domain';
import {
  NodeDrainRecord,
  NodeDrains,
  decodeOutcomes,
  decodeSince,
  encodeOutcomes,
  encodeSince,
} from '../node-drains.repository';
import { RedisConnection } from './redis-connection';

/** One hash for the flags (field node id, value since ms) and one for the outcomes (JSON). */
const DRAINS_KEY = 'ppn-fleet:node-drains';
const OUTCOMES_KEY = 'ppn-fleet:node-drain-outcomes';

/** Drains in the Redis every controller shares: one HGETALL per placement. */
export class RedisNodeDrains extends NodeDrains {
  constructor(private readonly connection: RedisConnection) {
    super();
  }

  async drain(nodeId: string, sinceWallMs: number): Promise<NodeDrainRecord> {
    const created = await this.connection.run((client) =>
      client.hsetnx(DRAINS_KEY, nodeId, encodeSince(sinceWallMs)),
    );
    if (created === 1) {
      await this.connection.run((client) => client.hdel(OUTCOMES_KEY, nodeId));
      return { sinceWallMs, vms: [] };
    }
    return (await this.find(nodeId)) ?? { sinceWallMs, vms: [] };
  }

  async undrain(nodeId: string): Promise<boolean> {
    const replies = await this.connection.run((client) =>
      client.multi().hdel(DRAINS_KEY, nodeId).hdel(OUTCOMES_KEY, nodeId).exec(),
    );
    return replies?.[0]?.[1] === 1;
  }

  async find(nodeId: string): Promise<NodeDrainRecord | undefined> {
    const [since, outcomes] = await this.connection.run((client) =>
      Promise.all([client.hget(DRAINS_KEY, nodeId), client.hget(OUTCOMES_KEY, nodeId)]),
    );
    const sinceWallMs = decodeSince(since);
    return sinceWallMs === undefined ? undefined : { sinceWallMs, vms: decodeOutcomes(outcomes) };
  }

  async drainedSince(): Promise<Map<string, number>> {
    const all = await this.connection.run((client) => client.hgetall(DRAINS_KEY));
    const drained = new Map<string, number>();
    for (const [nodeId, text] of Object.entries(all)) {
      const since = decodeSince(text);
      if (since !== undefined) drained.set(nodeId, since);
    }
    return drained;
  }

  async recordOutcomes(nodeId: string, vms: readonly DrainedVm[]): Promise<void> {
    await this.connection.run((client) => client.hset(OUTCOMES_KEY, nodeId, encodeOutcomes(vms)));
  }
}
