import type { DrainedVm } from '@app/fleet-domain';
import { InMemoryNodeDrains } from '../../apps/fleet/src/nodes/memory/in-memory-node-drains.repository';
import { NodeDrains } from '../../apps/fleet/src/nodes/node-drains.repository';
import { RedisConnection } from '../../apps/fleet/src/nodes/redis/redis-connection';
import { RedisNodeDrains } from '../../apps/fleet/src/nodes/redis/redis-node-drains.repository';
import { EtcdClient } from '../../apps/fleet/src/nodes/etcd/etcd.client';
import { EtcdNodeDrains } from '../../apps/fleet/src/nodes/etcd/etcd-node-drains.repository';
import { Logger } from '@nestjs/common';
import { DRAIN_CLAIM_HOLD_MS, takeDrainClaim } from '../../apps/fleet/src/drains/drain-claim';
import { KeyClaims } from '../../apps/fleet/src/nodes/key-claims.repository';
import { InMemoryKeyClaims } from '../../apps/fleet/src/nodes/memory/in-memory-key-claims.repository';
import { RedisKeyClaims } from '../../apps/fleet/src/nodes/redis/redis-key-claims.repository';
import { EtcdKeyClaims } from '../../apps/fleet/src/nodes/etcd/etcd-key-claims.repository';
import { RedisServer } from '../support/redis-server';
import { EtcdServer } from '../support/etcd-server';

/**
 * The drained nodes, in each store: one contract for memory, Redis and etcd, and in Redis and
 * etcd the mark seen alike by two controllers on the store (a second instance, as a restarted
 * controller or another one is), under keys of their own beside the node records. And a
 * drain's claim on its node (drain-claim.ts) held by one controller at a time.
 */

let redisServer: RedisServer;
let etcdServer: EtcdServer;

beforeAll(async () => {
  redisServer = await RedisServer.start();
  etcdServer = await EtcdServer.start();
});

afterAll(async () => {
  await redisServer.stop();
  await etcdServer.stop();
});

/** Two controllers' views of one store (memory: one process, so the same instance). */
interface Store {
  first: NodeDrains;
  second: NodeDrains;
  /** The same two controllers' claims (a drain claims its node there). */
  claims: [KeyClaims, KeyClaims];
  keys: () => Promise<string[]>;
  close: () => Promise<void>;
}

const stores: Array<[string, () => Promise<Store>]> = [
  [
    'in memory',
    () => {
      const drains = new InMemoryNodeDrains();
      const claims = new InMemoryKeyClaims();
      return Promise.resolve({
        first: drains,
        second: drains,
        claims: [claims, claims],
        keys: () => Promise.resolve([]),
        close: () => Promise.resolve(),
      });
    },
  ],
  [
    'in Redis',
    async () => {
      const open = async () => {
        const connection = new RedisConnection(redisServer.url, redisServer.url);
        await new Promise((resolve) => connection.client.once('ready', resolve));
        return connection;
      };
      const [one, two] = [await open(), await open()];
      await one.client.flushdb();
      return {
        first: new RedisNodeDrains(one),
        second: new RedisNodeDrains(two),
        claims: [new RedisKeyClaims(one), new RedisKeyClaims(two)],
        keys: async () => (await one.client.keys('*')).sort(),
        close: async () => {
          await one.onApplicationShutdown();
          await two.onApplicationShutdown();
        },
      };
    },
  ],
  [
    'in etcd',
    async () => {
      await etcdServer.clear();
      const [one, two] = [0, 1].map(() => new EtcdClient({ endpoints: [etcdServer.endpoint] }));
      return {
        first: new EtcdNodeDrains(one),
        second: new EtcdNodeDrains(two),
        claims: [new EtcdKeyClaims(one), new EtcdKeyClaims(two)],
        keys: async () => (await etcdServer.keys()).sort(),
        close: () => {
          one.close();
          two.close();
          return Promise.resolve();
        },
      };
    },
  ],
];

const MOVED: DrainedVm = {
  vm_id: 'vm-00000000000000a1',
  outcome: 'moved',
  to_node_id: 'n2',
  mode: 'live',
  message: null,
  took_ms: 12_300,
};

describe.each(stores)('node drains %s', (name, open) => {
  let store: Store;

  beforeEach(async () => {
    store = await open();
  });

  afterEach(async () => {
    await store.close();
  });

  it('keeps the mark and its outcomes for every controller until undrained, then forgets both', async () => {
    const { first, second } = store;
    expect(await first.drain('n1', 1_000)).toEqual({ sinceWallMs: 1_000, vms: [] });
    // Drained already: it keeps its since.
    expect(await second.drain('n1', 5_000)).toEqual({ sinceWallMs: 1_000, vms: [] });
    expect(await second.drainedSince()).toEqual(new Map([['n1', 1_000]]));
    expect(await second.find('n2')).toBeUndefined();

    await first.recordOutcomes('n1', [MOVED]);
    expect(await second.find('n1')).toEqual({ sinceWallMs: 1_000, vms: [MOVED] });
    if (name === 'in Redis') {
      expect(await store.keys()).toEqual([
        'ppn-fleet:node-drain-outcomes',
        'ppn-fleet:node-drains',
      ]);
    }
    if (name === 'in etcd') {
      expect(await store.keys()).toEqual([
        'ppn-fleet/node-drain-outcomes/n1',
        'ppn-fleet/node-drain/n1',
      ]);
    }

    expect(await second.undrain('n1')).toBe(true);
    expect(await first.undrain('n1')).toBe(false);
    expect(await first.find('n1')).toBeUndefined();
    expect(await first.drainedSince()).toEqual(new Map());
    // A new drain starts with no outcomes of the last one.
    expect(await first.drain('n1', 9_000)).toEqual({ sinceWallMs: 9_000, vms: [] });
    expect((await second.find('n1'))?.vms).toEqual([]);
  });

  it("lets one controller drain a node at a time: the other's claim refused (409 naming the node), renewed by its holder only, free once released", async () => {
    const [first, second] = store.claims;
    const logger = new Logger('test');
    const held = await takeDrainClaim(first, 'n1', logger);
    await expect(takeDrainClaim(second, 'n1', logger)).rejects.toMatchObject({
      status: 409,
      message: expect.stringContaining('node n1: a drain of it is under way') as string,
    });
    // Another node's drain is a claim of its own.
    const other = await takeDrainClaim(second, 'n2', logger);
    await other.release();

    // The holder renews its claim; a taker whose claim is gone cannot.
    const own = await first.claim('drain:n3', 'drain:n3', DRAIN_CLAIM_HOLD_MS);
    expect(own.kind).toBe('own');
    if (own.kind !== 'own') return;
    expect(await first.renew(own, DRAIN_CLAIM_HOLD_MS)).toBe(true);
    expect(await second.renew({ ...own, token: 'someone-else' }, DRAIN_CLAIM_HOLD_MS)).toBe(false);
    await first.release(own);
    expect(await first.renew(own, DRAIN_CLAIM_HOLD_MS)).toBe(false);

    await held.release();
    const next = await takeDrainClaim(second, 'n1', logger);
    await next.release();
  });
});
