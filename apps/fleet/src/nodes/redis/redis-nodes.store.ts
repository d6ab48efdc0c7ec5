import { NodesStore } from '../nodes-store';
import { RedisConnection } from './redis-connection';
import { RedisKeyClaims } from './redis-key-claims.repository';
import { RedisNodesRepository } from './redis-nodes.repository';
import { RedisVmMoves } from './redis-vm-moves.repository';
import { RedisClock } from './redis.clock';
import { RedisNodeDrains } from './redis-node-drains.repository';

/**
 * Fleet state shared in Redis (VM_FLEET_REDIS_URL): one connection for the store and the
 * clock, which is Redis TIME, so every controller on it agrees on staleness.
 */
export const REDIS_NODES_STORE: NodesStore = {
  name: 'redis',
  isChosenBy: (config) => config.redisUrl !== undefined,
  open: (config) => {
    const connection = new RedisConnection(config.redisUrl!, config.redisUrlForLogs ?? '');
    const clock = new RedisClock(connection);
    return {
      repository: new RedisNodesRepository(connection),
      keyClaims: new RedisKeyClaims(connection),
      vmMoves: new RedisVmMoves(connection),
      nodeDrains: new RedisNodeDrains(connection),
      clock,
      close: async () => {
        clock.onApplicationShutdown();
        await connection.onApplicationShutdown();
      },
    };
  },
};
