import Redis from 'ioredis';
import { acceptHeartbeat, endExpiredHolds, holdRam } from '@app/fleet-domain';
import { InMemoryNodesRepository } from '../../apps/fleet/src/nodes/memory/in-memory-nodes.repository';
import { NodesRepository } from '../../apps/fleet/src/nodes/nodes.repository';
import { RedisNodesRepository } from '../../apps/fleet/src/nodes/redis/redis-nodes.repository';
import { RedisConnection } from '../../apps/fleet/src/nodes/redis/redis-connection';
import { heartbeat } from '../support/heartbeats';
import { RedisServer } from '../support/redis-server';

/**
 * Both stores find the nodes whose holds are due without reading every node, forget them once
 * their holds ended or they were dropped, and leave nothing behind in Redis.
 */
describe('RAM hold deadlines in both stores', () => {
  let redisServer: RedisServer;
  let inspector: Redis;
  let connection: RedisConnection;

  beforeAll(async () => {
    redisServer = await RedisServer.start();
    inspector = new Redis(redisServer.url);
    connection = new RedisConnection(redisServer.url, redisServer.url);
    await new Promise((resolve) => connection.client.once('ready', resolve));
  });

  afterAll(async () => {
    await connection.onApplicationShutdown();
    // quit, not disconnect: disconnect leaves a 2 s timer that keeps jest from exiting.
    await inspector.quit();
    await redisServer.stop();
  });

  const repositories: Array<[string, () => Promise<NodesRepository>]> = [
    ['in memory', () => Promise.resolve(new InMemoryNodesRepository())],
    [
      'in Redis',
      async () => {
        await inspector.flushdb();
        return new RedisNodesRepository(connection);
      },
    ],
  ];

  function hold(holdId: string, nowMs: number, lifetimeMs: number) {
    return holdRam(
      {
        holdId,
        ramMb: 512,
        requiredFreeMb: 0,
        nowMs,
        expiresAtMs: nowMs + lifetimeMs,
        spawnKey: `${'0'.repeat(64)}.${holdId.padStart(64, '0')}`,
      },
      0,
    );
  }

  it.each(repositories)(
    '%s: lists a node once its earliest hold is due, not before, and not after it ended',
    async (_name, open) => {
      const nodes = await open();
      for (const node_id of ['quiet', 'busy', 'other']) {
        await nodes.update(node_id, acceptHeartbeat(heartbeat({ node_id }), 1_000));
      }
      await nodes.update('busy', hold('long', 1_000, 30_000));
      await nodes.update('busy', hold('short', 1_000, 5_000));
      await nodes.update('other', hold('h', 1_000, 20_000));

      expect(await nodes.nodesWithExpiredHolds(5_999)).toEqual([]);
      expect(await nodes.nodesWithExpiredHolds(6_000)).toEqual(['busy']);
      const ended = await nodes.update('busy', endExpiredHolds(6_000));
      expect(ended.map(({ holdId }) => holdId)).toEqual(['short']);
      // Its other hold is due later: listed again only then.
      expect(await nodes.nodesWithExpiredHolds(6_000)).toEqual([]);
      expect((await nodes.nodesWithExpiredHolds(31_000)).sort()).toEqual(['busy', 'other']);

      // A node dropped with its holds is forgotten too.
      await nodes.dropStale(2_000);
      expect(await nodes.nodesWithExpiredHolds(31_000)).toEqual([]);
    },
  );

  it('leaves no deadline behind in Redis once every hold ended', async () => {
    const nodes = await repositories[1][1]();
    await nodes.update('n1', acceptHeartbeat(heartbeat({ node_id: 'n1' }), 1_000));
    await nodes.update('n1', hold('h1', 1_000, 5_000));
    expect(await inspector.zrange('ppn-fleet:hold-deadlines', 0, -1, 'WITHSCORES')).toEqual([
      'n1',
      '6000',
    ]);
    await nodes.update('n1', endExpiredHolds(6_000));
    expect(await inspector.exists('ppn-fleet:hold-deadlines')).toBe(0);

    // A node whose key expired with no sweep to drop it is forgotten by the next look.
    await nodes.update('n2', acceptHeartbeat(heartbeat({ node_id: 'n2' }), 1_000));
    await nodes.update('n2', hold('h2', 1_000, 5_000));
    await inspector.del('ppn-fleet:node:n2');
    expect(await nodes.nodesWithExpiredHolds(6_000)).toEqual([]);
    expect(await inspector.exists('ppn-fleet:hold-deadlines')).toBe(0);
  });
});
