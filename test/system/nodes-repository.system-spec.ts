import Redis from 'ioredis';
import { NodeHeartbeat, VmRecord } from '@app/fleet-domain';
import { InMemoryNodesRepository } from '../../apps/fleet/src/nodes/in-memory-nodes.repository';
import { NodesRepository } from '../../apps/fleet/src/nodes/nodes.repository';
import { RedisNodesRepository } from '../../apps/fleet/src/nodes/redis-nodes.repository';
import { RedisConnection } from '../../apps/fleet/src/redis/redis-connection';
import { heartbeat as agentHeartbeat, vmRecord } from '../support/heartbeats';
import { RedisServer } from '../support/redis-server';

/**
 * One contract, both stores: whatever the in-memory repository does, the Redis one does too
 * (against a real redis-server). Times are passed explicitly, as the service passes them.
 */
interface Store {
  repository: NodesRepository;
  /** Keys left in Redis besides the version counter; 0 for memory. */
  leftoverKeys(): Promise<number>;
  close(): Promise<void>;
}

let redisServer: RedisServer;
let inspector: Redis;

beforeAll(async () => {
  redisServer = await RedisServer.start();
  inspector = new Redis(redisServer.url);
});

afterAll(async () => {
  inspector.disconnect();
  await redisServer.stop();
});

const stores: Array<[string, () => Promise<Store>]> = [
  [
    'in memory',
    () =>
      Promise.resolve({
        repository: new InMemoryNodesRepository(),
        leftoverKeys: () => Promise.resolve(0),
        close: () => Promise.resolve(),
      }),
  ],
  [
    'in Redis',
    async () => {
      await inspector.flushdb();
      const connection = new RedisConnection(redisServer.url, redisServer.url);
      await new Promise((resolve) => connection.client.once('ready', resolve));
      return {
        repository: new RedisNodesRepository(connection),
        leftoverKeys: async () =>
          (await inspector.keys('*')).filter((key) => key !== 'ppn-fleet:version').length,
        close: () => connection.onApplicationShutdown(),
      };
    },
  ],
];

/** 4096 MB free on every node unless a test says otherwise. */
function heartbeat(node_id: string, extra: Partial<NodeHeartbeat> = {}): NodeHeartbeat {
  return agentHeartbeat({ node_id, ram_total_mb: 8192, ram_used_mb: 4096, ...extra });
}

function vm(vm_id: string, ram_alloc_mb = 1024, tenant_id: string | null = null): VmRecord {
  return vmRecord(vm_id, { ram_alloc_mb, tenant_id });
}

describe.each(stores)('NodesRepository %s', (_name, open) => {
  let store: Store;
  let nodes: NodesRepository;

  beforeEach(async () => {
    store = await open();
    nodes = store.repository;
  });

  afterEach(async () => {
    await store.close();
  });

  it('enrolls on the first heartbeat and replaces the record wholesale on the next', async () => {
    expect(
      await nodes.applyHeartbeat(heartbeat('n1', { vms: [vm('a', 1024, 'acme'), vm('b')] }), 1_000),
    ).toEqual({
      kind: 'joined',
    });
    expect(
      await nodes.applyHeartbeat(
        heartbeat('n1', {
          timestamp_utc: '2026-08-06T12:00:10Z',
          ram_used_mb: 1024,
          vms: [vm('c')],
        }),
        2_000,
      ),
    ).toEqual({ kind: 'refreshed' });
    const state = await nodes.findLive('n1', 0);
    expect(state?.vms.map((v) => v.vm_id)).toEqual(['c']);
    expect(state?.record).toEqual({
      node_id: 'n1',
      hostname: 'host-n1',
      wg_ip: '127.0.0.1',
      ram_available_mb: 7168,
      vm_count: 1,
      kvm_available: false,
      reserved: false,
      last_heartbeat: new Date(2_000).toISOString(),
    });
  });

  it('ignores an older heartbeat of the same boot, and lets another boot or host take over', async () => {
    await nodes.applyHeartbeat(heartbeat('n1', { timestamp_utc: '2026-08-06T12:00:10Z' }), 1_000);
    expect(
      (
        await nodes.applyHeartbeat(
          heartbeat('n1', { timestamp_utc: '2026-08-06T12:00:09Z', ram_used_mb: 1 }),
          2_000,
        )
      ).kind,
    ).toBe('out-of-order');
    expect((await nodes.findLive('n1', 0))?.received_at_ms).toBe(1_000);
    expect(
      (
        await nodes.applyHeartbeat(
          heartbeat('n1', { boot_id: 'boot-2', timestamp_utc: '2020-01-01T00:00:00Z' }),
          3_000,
        )
      ).kind,
    ).toBe('taken-over');
    expect((await nodes.findLive('n1', 0))?.boot_id).toBe('boot-2');
  });

  it('never reads a record older than notBefore', async () => {
    await nodes.applyHeartbeat(heartbeat('old'), 1_000);
    await nodes.applyHeartbeat(heartbeat('new'), 5_000);
    expect((await nodes.listLive(1_001)).map((state) => state.node_id)).toEqual(['new']);
    expect(await nodes.findLive('old', 1_001)).toBeUndefined();
    expect(await nodes.findLive('old', 1_000)).toBeDefined();
    expect(await nodes.findLive('nobody', 0)).toBeUndefined();
  });

  it('drops stale nodes, returns them, and leaves no key behind', async () => {
    for (let index = 0; index < 30; index++)
      await nodes.applyHeartbeat(heartbeat(`stale-${index}`), 1_000);
    await nodes.applyHeartbeat(heartbeat('fresh'), 9_000);
    const dropped = await nodes.dropStale(5_000);
    expect(dropped.map((state) => state.node_id).sort()).toEqual(
      Array.from({ length: 30 }, (_, index) => `stale-${index}`).sort(),
    );
    expect((await nodes.listLive(0)).map((state) => state.node_id)).toEqual(['fresh']);
    expect(await nodes.dropStale(5_000)).toEqual([]);
    await nodes.dropStale(10_000);
    expect(await nodes.listLive(0)).toEqual([]);
    expect(await store.leftoverKeys()).toBe(0);
  });

  it('holds RAM only while it fits, and never for a stale node', async () => {
    await nodes.applyHeartbeat(heartbeat('n1'), 10_000);
    expect(await nodes.hold('n1', 'h1', 1024, 1536, 0)).toBe(true);
    expect((await nodes.findLive('n1', 0))?.record.ram_available_mb).toBe(3072);
    expect(await nodes.hold('n1', 'h2', 2560, 3073, 0)).toBe(false);
    expect(await nodes.hold('n1', 'h3', 64, 0, 10_001)).toBe(false);
    expect(await nodes.hold('ghost', 'h4', 64, 0, 0)).toBe(false);
  });

  it('lets concurrent holds on one node take only the RAM there is', async () => {
    await nodes.applyHeartbeat(heartbeat('n1'), 10_000);
    // 4096 MB free; each 1024 MB VM needs 1536 free: three fit (4096, 3072, 2048), not a fourth.
    const held = await Promise.all(
      Array.from({ length: 10 }, (_, index) => nodes.hold('n1', `h${index}`, 1024, 1536, 0)),
    );
    expect(held.filter(Boolean)).toHaveLength(3);
    expect((await nodes.findLive('n1', 0))?.record.ram_available_mb).toBe(1024);
  });

  it('lists a dispatched VM with its RAM held until the next heartbeat; release and removal give it back', async () => {
    await nodes.applyHeartbeat(heartbeat('n1', { vms: [vm('a')] }), 10_000);
    await nodes.hold('n1', 'h1', 2048, 2560, 0);
    await nodes.recordDispatchedVm('n1', 'h1', vm('new', 2048, 'acme'));
    let state = await nodes.findLive('n1', 0);
    expect(state?.vms.map((v) => [v.vm_id, v.tenant_id])).toEqual([
      ['a', null],
      ['new', 'acme'],
    ]);
    expect(state?.record).toMatchObject({ vm_count: 2, ram_available_mb: 2048 });

    await nodes.removeVm('n1', 'new');
    state = await nodes.findLive('n1', 0);
    expect(state?.record).toMatchObject({ vm_count: 1, ram_available_mb: 4096 });

    await nodes.hold('n1', 'h2', 1024, 1536, 0);
    await nodes.releaseHold('n1', 'h2');
    expect((await nodes.findLive('n1', 0))?.record.ram_available_mb).toBe(4096);

    await nodes.hold('n1', 'h3', 1024, 1536, 0);
    await nodes.recordDispatchedVm('n1', 'h3', vm('later', 1024));
    await nodes.applyHeartbeat(
      heartbeat('n1', {
        timestamp_utc: '2026-08-06T12:00:10Z',
        ram_used_mb: 5120,
        vms: [vm('a'), vm('later')],
      }),
      11_000,
    );
    expect((await nodes.findLive('n1', 0))?.record).toMatchObject({
      vm_count: 2,
      ram_available_mb: 3072,
    });
  });
});
