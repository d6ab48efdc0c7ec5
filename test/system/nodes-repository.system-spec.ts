import { Logger } from '@nestjs/common';
import Redis from 'ioredis';
import {
  HeartbeatVerdict,
  NodeHeartbeat,
  NodeState,
  VmRecord,
  acceptHeartbeat,
  forgetSilentVm,
  holdRam,
  liveSince,
  noteDispatchFailure,
  nodeStateFromHeartbeat,
  recordDispatchedVm,
  releaseHold,
  removeVm,
} from '@app/fleet-domain';
import { KeyClaims } from '../../apps/fleet/src/nodes/key-claims.repository';
import { InMemoryKeyClaims } from '../../apps/fleet/src/nodes/memory/in-memory-key-claims.repository';
import { InMemoryNodesRepository } from '../../apps/fleet/src/nodes/memory/in-memory-nodes.repository';
import { VmHolderIndex } from '../../apps/fleet/src/nodes/memory/vm-holder-index';
import {
  NodesRepository,
  VmIdsHeldElsewhereError,
} from '../../apps/fleet/src/nodes/nodes.repository';
import { RedisNodesRepository } from '../../apps/fleet/src/nodes/redis/redis-nodes.repository';
import { RedisConnection } from '../../apps/fleet/src/nodes/redis/redis-connection';
import { RedisKeyClaims } from '../../apps/fleet/src/nodes/redis/redis-key-claims.repository';
import { RedisVmMoves } from '../../apps/fleet/src/nodes/redis/redis-vm-moves.repository';
import { InMemoryVmMoves } from '../../apps/fleet/src/nodes/memory/in-memory-vm-moves.repository';
import { VmMoves } from '../../apps/fleet/src/nodes/vm-moves.repository';
import { encodeStoredNode } from '../../apps/fleet/src/nodes/redis/stored-node';
import { heartbeat as agentHeartbeat, vmRecord } from '../support/heartbeats';
import { RedisServer } from '../support/redis-server';
import { EtcdServer } from '../support/etcd-server';
import { EtcdClient } from '../../apps/fleet/src/nodes/etcd/etcd.client';
import { EtcdNodesRepository } from '../../apps/fleet/src/nodes/etcd/etcd-nodes.repository';
import { EtcdVmMoves } from '../../apps/fleet/src/nodes/etcd/etcd-vm-moves.repository';
import { EtcdKeyClaims } from '../../apps/fleet/src/nodes/etcd/etcd-key-claims.repository';

/**
 * One contract, both stores: whatever the in-memory repository does, the Redis one does too
 * (against a real redis-server). Times are passed explicitly, as the service passes them; the
 * changes are the domain's, as the services pass them.
 */
interface Store {
  repository: NodesRepository;
  keyClaims: KeyClaims;
  vmMoves: VmMoves;
  /** Keys left in Redis besides the version counter; 0 for memory. */
  leftoverKeys(): Promise<number>;
  /** The VM ids the store's index names a holder for, sorted. */
  indexedVmIds(): Promise<string[]>;
  /**
   * How long after its deadline a claim nobody released surely ended: etcd's leases count
   * whole seconds, 2 at least.
   */
  claimEndsWithinMs: number;
  close(): Promise<void>;
}

let redisServer: RedisServer;
let etcdServer: EtcdServer;
let inspector: Redis;

/** Keys that count writes, left when every node is gone. */
const COUNTERS = ['ppn-fleet:version', 'ppn-fleet:vm-holders:writes'];
const VM_HOLDERS = 'ppn-fleet:vm-holders';

/** The index of VM ids as a record, without the fields of its own (no VM id has a space). */
async function vmHolderEntries(): Promise<Record<string, string>> {
  const entries = await inspector.hgetall(VM_HOLDERS);
  return Object.fromEntries(Object.entries(entries).filter(([field]) => !field.includes(' ')));
}

/** Keys left in Redis besides the counters; the index of VM ids counts if it names a VM id. */
async function leftoverRedisKeys(): Promise<number> {
  const keys = (await inspector.keys('*')).filter((key) => !COUNTERS.includes(key));
  const emptyIndex = Object.keys(await vmHolderEntries()).length === 0;
  return keys.filter((key) => !(key === VM_HOLDERS && emptyIndex)).length;
}

beforeAll(async () => {
  redisServer = await RedisServer.start();
  inspector = new Redis(redisServer.url);
  etcdServer = await EtcdServer.start();
});

afterAll(async () => {
  // quit, not disconnect: disconnect leaves a 2 s timer that keeps jest from exiting.
  await inspector.quit();
  await redisServer.stop();
  await etcdServer.stop();
});

const stores: Array<[string, () => Promise<Store>]> = [
  [
    'in memory',
    () => {
      const vmHolders = new VmHolderIndex();
      return Promise.resolve({
        repository: new InMemoryNodesRepository(vmHolders),
        keyClaims: new InMemoryKeyClaims(),
        vmMoves: new InMemoryVmMoves(),
        leftoverKeys: () => Promise.resolve(0),
        indexedVmIds: () => Promise.resolve(vmHolders.vmIds().sort()),
        claimEndsWithinMs: 150,
        close: () => Promise.resolve(),
      });
    },
  ],
  [
    'in Redis',
    async () => {
      await inspector.flushdb();
      const connection = new RedisConnection(redisServer.url, redisServer.url);
      await new Promise((resolve) => connection.client.once('ready', resolve));
      return {
        repository: new RedisNodesRepository(connection),
        keyClaims: new RedisKeyClaims(connection),
        vmMoves: new RedisVmMoves(connection),
        leftoverKeys: leftoverRedisKeys,
        indexedVmIds: async () => Object.keys(await vmHolderEntries()).sort(),
        claimEndsWithinMs: 150,
        close: () => connection.onApplicationShutdown(),
      };
    },
  ],
  [
    'in etcd',
    async () => {
      await etcdServer.clear();
      const client = new EtcdClient({ endpoints: [etcdServer.endpoint] });
      return {
        repository: new EtcdNodesRepository(client),
        keyClaims: new EtcdKeyClaims(client),
        vmMoves: new EtcdVmMoves(client),
        leftoverKeys: async () => (await etcdServer.keys()).length,
        indexedVmIds: async () =>
          [
            ...new Set((await etcdServer.keys('ppn-fleet/vm/')).map((key) => key.split('/')[2])),
          ].sort(),
        claimEndsWithinMs: 3_000,
        close: () => {
          client.close();
          return Promise.resolve();
        },
      };
    },
  ],
];

/** 4096 MB free on every node unless a test says otherwise. */
function heartbeat(node_id: string, extra: Partial<NodeHeartbeat> = {}): NodeHeartbeat {
  return agentHeartbeat({ node_id, ram_total_mb: 8192, ram_used_mb: 4096, ...extra });
}

function hold(holdId: string, ramMb: number, requiredFreeMb: number) {
  return {
    holdId,
    ramMb,
    requiredFreeMb,
    nowMs: 0,
    expiresAtMs: Number.MAX_SAFE_INTEGER,
    spawnKey: `${'0'.repeat(64)}.${holdId.padStart(64, '0')}`,
  };
}

function vm(vm_id: string, ram_alloc_mb = 1024, tenant_id: string | null = null): VmRecord {
  return vmRecord(vm_id, { ram_alloc_mb, tenant_id });
}

describe.each(stores)('NodesRepository %s', (_name, open) => {
  let store: Store;
  let nodes: NodesRepository;

  /** A heartbeat received at `receivedAtMs`, applied as NodesService applies it. */
  function beat(
    node_id: string,
    receivedAtMs: number,
    extra: Partial<NodeHeartbeat> = {},
  ): Promise<HeartbeatVerdict> {
    return nodes.update(node_id, acceptHeartbeat(heartbeat(node_id, extra), receivedAtMs));
  }

  beforeEach(async () => {
    store = await open();
    nodes = store.repository;
  });

  afterEach(async () => {
    await store.close();
  });

  describe('update', () => {
    it('hands decide what is stored, stores its next state and answers its result', async () => {
      const seen: Array<NodeState | undefined> = [];
      const first = nodeStateFromHeartbeat(heartbeat('n1'), 1_000);
      expect(
        await nodes.update('n1', (stored) => {
          seen.push(stored);
          return { next: first, result: 'stored' };
        }),
      ).toBe('stored');
      expect(
        await nodes.update('n1', (stored) => {
          seen.push(stored);
          return { result: stored?.received_at_ms };
        }),
      ).toBe(1_000);
      expect(seen).toEqual([undefined, first]);
      expect(await nodes.findLive('n1', 0)).toEqual(first);
    });

    it('writes nothing when decide has no next state, or throws', async () => {
      expect(await nodes.update('ghost', () => ({ result: 42 }))).toBe(42);
      expect(await nodes.findLive('ghost', 0)).toBeUndefined();
      expect(await store.leftoverKeys()).toBe(0);

      await beat('n1', 1_000);
      const before = await nodes.findLive('n1', 0);
      await expect(
        nodes.update('n1', () => {
          throw new Error('undecided');
        }),
      ).rejects.toThrow('undecided');
      expect(await nodes.findLive('n1', 0)).toEqual(before);
    });

    it('hands decide a node gone stale but not yet dropped', async () => {
      await beat('n1', 1_000);
      expect(await nodes.findLive('n1', 5_000)).toBeUndefined();
      expect(await nodes.update('n1', (stored) => ({ result: stored?.received_at_ms }))).toBe(
        1_000,
      );
    });

    it('loses no change when many land on one node at once', async () => {
      await beat('n1', 10_000);
      await Promise.all(
        Array.from({ length: 10 }, (_, index) =>
          nodes.update('n1', holdRam(hold(`h${index}`, 100, 0), 0)),
        ),
      );
      const state = await nodes.findLive('n1', 0);
      expect(Object.keys(state?.holds ?? {}).sort()).toEqual(
        Array.from({ length: 10 }, (_, index) => `h${index}`).sort(),
      );
      expect(state?.record.ram_available_mb).toBe(3096);
    });

    it('decides each concurrent change on the latest state: holds take only the RAM there is', async () => {
      await beat('n1', 10_000);
      // 4096 MB free; each 1024 MB VM needs 1536 free: three fit (4096, 3072, 2048), not a fourth.
      const held = await Promise.all(
        Array.from({ length: 10 }, (_, index) =>
          nodes.update('n1', holdRam(hold(`h${index}`, 1024, 1536), 0)),
        ),
      );
      expect(held.filter(Boolean)).toHaveLength(3);
      expect((await nodes.findLive('n1', 0))?.record.ram_available_mb).toBe(1024);
    });
  });

  it('enrolls on the first heartbeat and replaces the record wholesale on the next', async () => {
    expect(await beat('n1', 1_000, { vms: [vm('a', 1024, 'acme'), vm('b')] })).toEqual({
      kind: 'joined',
    });
    expect(
      await beat('n1', 2_000, {
        timestamp_utc: '2026-08-06T12:00:10Z',
        ram_used_mb: 1024,
        vms: [vm('c')],
      }),
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
    // Stamped when received (1 s after the epoch): a stamp ahead of it would not be trusted.
    await beat('n1', 1_000, { timestamp_utc: '1970-01-01T00:00:01Z' });
    expect(
      (await beat('n1', 2_000, { timestamp_utc: '1970-01-01T00:00:00.999Z', ram_used_mb: 1 })).kind,
    ).toBe('out-of-order');
    expect((await nodes.findLive('n1', 0))?.received_at_ms).toBe(1_000);
    expect(
      (await beat('n1', 3_000, { boot_id: 'boot-2', timestamp_utc: '2020-01-01T00:00:00Z' })).kind,
    ).toBe('taken-over');
    expect((await nodes.findLive('n1', 0))?.boot_id).toBe('boot-2');
  });

  it('never reads a record older than notBefore', async () => {
    await beat('old', 1_000);
    await beat('new', 5_000);
    expect((await nodes.listLive(1_001)).map((state) => state.node_id)).toEqual(['new']);
    expect((await nodes.listLiveRecords(1_001)).map((record) => record.node_id)).toEqual(['new']);
    expect((await nodes.listLiveRecords(1_000)).map((record) => record.node_id).sort()).toEqual([
      'new',
      'old',
    ]);
    expect(await nodes.findLive('old', 1_001)).toBeUndefined();
    expect(await nodes.findLive('old', 1_000)).toBeDefined();
    expect(await nodes.findLive('nobody', 0)).toBeUndefined();
  });

  it('lists the same records as the states it holds', async () => {
    await beat('n1', 1_000, { vms: [vm('a')] });
    await beat('n2', 2_000);
    await nodes.update('n2', holdRam(hold('h1', 512, 0), 0));
    const records = (await nodes.listLive(0)).map((state) => state.record).sort(byNodeId);
    expect((await nodes.listLiveRecords(0)).sort(byNodeId)).toEqual(records);
    expect(records.map((record) => record.ram_available_mb)).toEqual([4096, 3584]);
  });

  it('drops stale nodes, returns them, and leaves no key behind', async () => {
    for (let index = 0; index < 30; index++) await beat(`stale-${index}`, 1_000);
    await beat('fresh', 9_000);
    const dropped = await nodes.dropStale(5_000);
    expect(dropped.map((state) => state.node_id).sort()).toEqual(
      Array.from({ length: 30 }, (_, index) => `stale-${index}`).sort(),
    );
    expect((await nodes.listLive(0)).map((state) => state.node_id)).toEqual(['fresh']);
    expect(await nodes.update('stale-0', (stored) => ({ result: stored }))).toBeUndefined();
    expect(await nodes.dropStale(5_000)).toEqual([]);
    await nodes.dropStale(10_000);
    expect(await nodes.listLive(0)).toEqual([]);
    expect(await store.leftoverKeys()).toBe(0);
  });

  it('keeps a node that drops out with VMs, silent, until it heartbeats again or its last VM is forgotten', async () => {
    await beat('quiet', 1_000, { vms: [vm('q1'), vm('q2')] });
    await beat('empty', 1_000);
    await beat('fresh', 9_000);
    const dropped = await nodes.dropStale(5_000);
    expect(dropped.map((state) => state.node_id).sort()).toEqual(['empty', 'quiet']);
    // Out of every live read, but stored, whole, for its VMs; the one with none is gone.
    expect((await nodes.listLive(0)).map((state) => state.node_id)).toEqual(['fresh']);
    expect(await nodes.findLive('quiet', 0)).toBeUndefined();
    const all = await nodes.listAll();
    expect(all.map((state) => state.node_id).sort()).toEqual(['fresh', 'quiet']);
    expect(all.find((state) => state.node_id === 'quiet')?.vms.map((v) => v.vm_id)).toEqual([
      'q1',
      'q2',
    ]);
    expect(await nodes.dropStale(5_000)).toEqual([]);
    expect(await nodes.nodesWithExpiredHolds(Number.MAX_SAFE_INTEGER)).toEqual([]);

    // A change that is no heartbeat leaves it silent; a forgotten VM goes, the node with its last.
    await nodes.update('quiet', noteDispatchFailure('unreachable', 6_000));
    expect(await nodes.update('quiet', forgetSilentVm('q1', 5_000))).toBe('forgotten');
    expect((await nodes.listLive(0)).map((state) => state.node_id)).toEqual(['fresh']);
    const quiet = (await nodes.listAll()).find((state) => state.node_id === 'quiet');
    expect(quiet?.vms.map((v) => v.vm_id)).toEqual(['q2']);
    expect(quiet?.dispatch_failures).toMatchObject({ in_a_row: 1 });
    expect(await nodes.update('quiet', forgetSilentVm('q2', 5_000))).toBe('forgotten');
    expect((await nodes.listAll()).map((state) => state.node_id)).toEqual(['fresh']);

    // Its heartbeat brings it back, live, with the VMs it reports (its own again, and a new one).
    await beat('back', 1_000, { vms: [vm('b1')] });
    await nodes.dropStale(5_000);
    expect((await beat('back', 40_000, { vms: [vm('b1'), vm('b2')] })).kind).toBe('joined');
    const back = await nodes.findLive('back', liveSince(40_000));
    expect(back?.vms.map((v) => v.vm_id)).toEqual(['b1', 'b2']);
    expect(back?.silent_vms).toEqual([]);
    expect((await nodes.listAll()).filter((state) => state.node_id === 'back')).toHaveLength(1);
    // Silent again later: kept again.
    await nodes.dropStale(80_000);
    expect((await nodes.listAll()).map((state) => state.node_id)).toEqual(['back']);
    await nodes.update('back', forgetSilentVm('b1', 80_000));
    await nodes.update('back', forgetSilentVm('b2', 80_000));
    expect(await nodes.listAll()).toEqual([]);
    expect(await store.leftoverKeys()).toBe(0);
  });

  it("keeps the VMs a silent node's id no longer lists, silent, beside the node now live under it", async () => {
    await beat('quiet', 1_000, { vms: [vm('q1'), vm('q2')] });
    await nodes.dropStale(5_000);
    // Another machine speaks for the id, listing a VM of its own and q2.
    const clone = { hostname: 'clone', boot_id: 'boot-clone', vms: [vm('c1'), vm('q2')] };
    const verdict = await beat('quiet', 40_000, clone);
    expect(verdict).toMatchObject({ kind: 'joined', silent: { vms: 2 } });
    const live = await nodes.findLive('quiet', liveSince(40_000));
    expect(live?.vms.map((v) => v.vm_id)).toEqual(['c1', 'q2']);
    expect(live?.silent_vms.map((s) => s.vm.vm_id)).toEqual(['q1']);
    expect(live?.silent_vms[0].speaker).toEqual({
      boot_id: 'boot-1',
      wg_ip: '127.0.0.1',
      hostname: 'host-quiet',
    });
    // Out of the node's figures: 4096 MB free, as the clone reports.
    const [record] = await nodes.listLiveRecords(liveSince(40_000));
    expect(record).toMatchObject({ node_id: 'quiet', vm_count: 2, ram_available_mb: 4096 });
    expect(await nodes.update('quiet', holdRam(hold('h1', 4096, 4096), liveSince(40_000)))).toBe(
      true,
    );
    // Kept through the clone's beats, and when it drops out in turn; forgotten on request.
    await beat('quiet', 45_000, clone);
    await nodes.dropStale(80_000);
    const silent = (await nodes.listAll()).find((state) => state.node_id === 'quiet');
    expect(silent?.silent_vms.map((s) => s.vm.vm_id)).toEqual(['q1']);
    expect(await nodes.update('quiet', forgetSilentVm('q1', 80_000))).toBe('forgotten');
    expect(await nodes.update('quiet', forgetSilentVm('c1', 80_000))).toBe('forgotten');
    expect(await nodes.update('quiet', forgetSilentVm('q2', 80_000))).toBe('forgotten');
    expect(await nodes.listAll()).toEqual([]);
    expect(await store.leftoverKeys()).toBe(0);
  });

  it('keeps a silent node whose only VMs are silent ones', async () => {
    await beat('quiet', 1_000, { vms: [vm('q1')] });
    await nodes.dropStale(5_000);
    await beat('quiet', 40_000, { boot_id: 'boot-clone', vms: [] });
    expect((await nodes.dropStale(80_000)).map((state) => state.node_id)).toEqual(['quiet']);
    const [kept] = await nodes.listAll();
    expect(kept.vms).toEqual([]);
    expect(kept.silent_vms.map((s) => s.vm.vm_id)).toEqual(['q1']);
    expect(await nodes.update('quiet', forgetSilentVm('q1', 80_000))).toBe('forgotten');
    expect(await nodes.listAll()).toEqual([]);
    expect(await store.leftoverKeys()).toBe(0);
  });

  it('forgets the longest silent nodes beyond the bound', async () => {
    for (const [index, nodeId] of ['c', 'a', 'b', 'd'].entries()) {
      await beat(nodeId, 1_000 + index, { vms: [vm(`${nodeId}1`)] });
    }
    await nodes.dropStale(5_000);
    expect(await nodes.forgetSilentBeyond(4)).toEqual([]);
    const forgotten = await nodes.forgetSilentBeyond(2);
    expect(forgotten.map((state) => state.node_id)).toEqual(['c', 'a']);
    expect((await nodes.listAll()).map((state) => state.node_id).sort()).toEqual(['b', 'd']);
    await nodes.forgetSilentBeyond(0);
    expect(await nodes.listAll()).toEqual([]);
    expect(await store.leftoverKeys()).toBe(0);
  });

  it('holds RAM only while it fits, and never for a stale node', async () => {
    await beat('n1', 10_000);
    expect(await nodes.update('n1', holdRam(hold('h1', 1024, 1536), 0))).toBe(true);
    expect((await nodes.findLive('n1', 0))?.record.ram_available_mb).toBe(3072);
    expect(await nodes.update('n1', holdRam(hold('h2', 2560, 3073), 0))).toBe(false);
    expect(await nodes.update('n1', holdRam(hold('h3', 64, 0), 10_001))).toBe(false);
    expect(await nodes.update('ghost', holdRam(hold('h4', 64, 0), 0))).toBe(false);
    expect(await nodes.findLive('ghost', 0)).toBeUndefined();
  });

  it('lists a dispatched VM with its RAM held until the next heartbeat; release and removal give it back', async () => {
    await beat('n1', 10_000, { vms: [vm('a')] });
    await nodes.update('n1', holdRam(hold('h1', 2048, 2560), 0));
    await nodes.update('n1', recordDispatchedVm('h1', vm('new', 2048, 'acme')));
    let state = await nodes.findLive('n1', 0);
    expect(state?.vms.map((v) => [v.vm_id, v.tenant_id])).toEqual([
      ['a', null],
      ['new', 'acme'],
    ]);
    expect(state?.record).toMatchObject({ vm_count: 2, ram_available_mb: 2048 });

    await nodes.update('n1', removeVm('new'));
    state = await nodes.findLive('n1', 0);
    expect(state?.record).toMatchObject({ vm_count: 1, ram_available_mb: 4096 });

    await nodes.update('n1', holdRam(hold('h2', 1024, 1536), 0));
    await nodes.update('n1', releaseHold('h2'));
    expect((await nodes.findLive('n1', 0))?.record.ram_available_mb).toBe(4096);

    await nodes.update('n1', holdRam(hold('h3', 1024, 1536), 0));
    await nodes.update('n1', recordDispatchedVm('h3', vm('later', 1024)));
    await beat('n1', 11_000, {
      timestamp_utc: '2026-08-06T12:00:10Z',
      ram_used_mb: 5120,
      vms: [vm('a'), vm('later')],
    });
    expect((await nodes.findLive('n1', 0))?.record).toMatchObject({
      vm_count: 2,
      ram_available_mb: 3072,
    });
  });
});

describe.each(stores)('NodesRepository.ownersOf %s', (_name, open) => {
  let store: Store;
  let nodes: NodesRepository;

  function beat(node_id: string, receivedAtMs: number, vmIds: string[]): Promise<unknown> {
    const vms = vmIds.map((vmId) => vm(vmId));
    return nodes.update(node_id, acceptHeartbeat(heartbeat(node_id, { vms }), receivedAtMs));
  }

  /** The owners of `vmIds` as another node, `asker`, would be told them. */
  async function owners(vmIds: string[], asker = 'asker'): Promise<Record<string, string>> {
    return Object.fromEntries(await nodes.ownersOf(vmIds, asker));
  }

  beforeEach(async () => {
    store = await open();
    nodes = store.repository;
  });

  afterEach(async () => {
    await store.close();
  });

  it('names the node holding each VM id: listed, kept silent, or minted for a hold; never the asker', async () => {
    await beat('n1', 1_000, ['a', 'b']);
    await beat('n2', 1_000, ['c']);
    await beat('n3', 9_000, []);
    await nodes.update('n3', holdRam({ ...hold('h1', 512, 0), vmId: 'd' }, 0));
    expect(await owners(['a', 'b', 'c', 'd', 'x'])).toEqual({ a: 'n1', b: 'n1', c: 'n2', d: 'n3' });
    expect(await owners(['a', 'c'], 'n2')).toEqual({ a: 'n1' });
    expect(await owners([])).toEqual({});
    // Silent, kept for its VMs: they are still its own.
    await nodes.dropStale(5_000);
    expect(await owners(['a', 'c'])).toEqual({ a: 'n1', c: 'n2' });
  });

  it('stops naming a node for a VM it no longer holds: replaced, removed, forgotten, swept', async () => {
    // Each step is read from the index before any lookup, which would repair a stale entry.
    await beat('n1', 1_000, ['a', 'b']);
    await beat('n1', 2_000, ['b']);
    expect(await store.indexedVmIds()).toEqual(['b']);
    expect(await owners(['a', 'b'])).toEqual({ b: 'n1' });
    await nodes.update('n1', removeVm('b'));
    expect(await store.indexedVmIds()).toEqual([]);

    // Forgotten one by one (DELETE ?forget=true), the node with its last.
    await beat('quiet', 1_000, ['q1', 'q2']);
    await nodes.dropStale(5_000);
    await nodes.update('quiet', forgetSilentVm('q1', 5_000));
    expect(await store.indexedVmIds()).toEqual(['q2']);
    await nodes.update('quiet', forgetSilentVm('q2', 5_000));
    expect(await store.indexedVmIds()).toEqual([]);

    // Forgotten beyond the silent nodes kept; swept with a hold for a VM not listed yet.
    await beat('old', 1_000, ['o1']);
    await nodes.dropStale(5_000);
    await nodes.forgetSilentBeyond(0);
    await beat('placing', 10_000, []);
    await nodes.update('placing', holdRam({ ...hold('h1', 512, 0), vmId: 'p1' }, 0));
    expect(await store.indexedVmIds()).toEqual(['p1']);
    await nodes.dropStale(50_000);
    expect(await store.indexedVmIds()).toEqual([]);

    // Its VMs reported elsewhere by an agent of its own id: still its own, as SilentVms.
    await beat('moved', 60_000, ['m1']);
    await nodes.dropStale(95_000);
    await nodes.update(
      'moved',
      acceptHeartbeat(heartbeat('moved', { boot_id: 'boot-clone', vms: [vm('m2')] }), 100_000),
    );
    expect(await owners(['m1', 'm2'])).toEqual({ m1: 'moved', m2: 'moved' });
    await nodes.update('moved', forgetSilentVm('m1', 100_000));
    expect(await store.indexedVmIds()).toEqual(['m2']);
    await nodes.update('moved', removeVm('m2'));
    expect(await store.indexedVmIds()).toEqual([]);
    await nodes.dropStale(200_000);
    expect(await store.leftoverKeys()).toBe(0);
  });

  it('refuses a write that would have a second node hold an id (claimed for the first), until the first lets it go', async () => {
    // Both listed it at once, before either heartbeat was stored: the store judges the write.
    await beat('first', 1_000, ['v']);
    await expect(beat('second', 1_000, ['v', 'w'])).rejects.toThrow(
      new VmIdsHeldElsewhereError('second', new Map([['v', 'first']])),
    );
    expect(await owners(['v', 'w'])).toEqual({ v: 'first' });
    expect(await owners(['v'], 'first')).toEqual({});
    await beat('first', 2_000, []);
    await beat('second', 2_000, ['v']);
    expect(await owners(['v'])).toEqual({ v: 'second' });
  });
});

describe('NodesRepository.ownersOf in Redis', () => {
  let connections: RedisConnection[];

  /** A controller's store on the test's Redis, as another process would open it. */
  async function controller(): Promise<RedisNodesRepository> {
    const connection = new RedisConnection(redisServer.url, redisServer.url);
    await new Promise((resolve) => connection.client.once('ready', resolve));
    connections.push(connection);
    return new RedisNodesRepository(connection);
  }

  function beat(nodes: NodesRepository, node_id: string, vmIds: string[]): Promise<unknown> {
    const vms = vmIds.map((vmId) => vm(vmId));
    return nodes.update(node_id, acceptHeartbeat(heartbeat(node_id, { vms }), 1_000));
  }

  beforeEach(async () => {
    await inspector.flushdb();
    connections = [];
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await Promise.all(connections.map((connection) => connection.onApplicationShutdown()));
  });

  it('answers what another controller on the same Redis wrote', async () => {
    const one = await controller();
    const other = await controller();
    await beat(one, 'n1', ['a']);
    expect(await other.ownersOf(['a'], 'n2')).toEqual(new Map([['a', 'n1']]));
    await beat(other, 'n1', []);
    expect(await one.ownersOf(['a'], 'n2')).toEqual(new Map());
    expect(await vmHolderEntries()).toEqual({});
  });

  it('never takes a stale entry for an owner, and takes it out', async () => {
    const nodes = await controller();
    await beat(nodes, 'n1', ['a']);
    expect(await nodes.ownersOf(['a'], 'n2')).toEqual(new Map([['a', 'n1']]));
    // As a node key that expired with no sweep, or a write of an earlier version, leaves them.
    await inspector.hset(VM_HOLDERS, 'b', 'n1', 'c', 'gone n1', 'a', 'gone n1');
    expect(await nodes.ownersOf(['a', 'b', 'c'], 'n2')).toEqual(new Map([['a', 'n1']]));
    expect(await vmHolderEntries()).toEqual({ a: 'n1' });
    // A holder whose key is no node state owns nothing, as listAll leaves it out; nor is it taken out.
    await inspector.set('ppn-fleet:node:junk', '7\n{}\nnot json');
    await inspector.hset(VM_HOLDERS, 'd', 'junk');
    expect(await nodes.ownersOf(['d'], 'n2')).toEqual(new Map());
    expect(await vmHolderEntries()).toEqual({ a: 'n1', d: 'junk' });
  });

  it('indexes a store written without the index once, and reads every node while an earlier version writes', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const nodes = await controller();
    await beat(nodes, 'n1', ['a']);
    await beat(nodes, 'silent', ['s']);
    await nodes.dropStale(5_000);
    // The store as the version before the index left it.
    await inspector.del(VM_HOLDERS, 'ppn-fleet:vm-holders:writes');
    const upgraded = await controller();
    expect(await upgraded.ownersOf(['a', 's', 'x'], 'n2')).toEqual(
      new Map([
        ['a', 'n1'],
        ['s', 'silent'],
      ]),
    );
    expect(await vmHolderEntries()).toEqual({ a: 'n1', s: 'silent' });

    // A controller of the earlier version, still on the same Redis, writes a node without it.
    const written = nodeStateFromHeartbeat(heartbeat('old', { vms: [vm('o')] }), 1_000);
    const version = await inspector.incr('ppn-fleet:version');
    await inspector.set('ppn-fleet:node:old', `${version}\n${encodeStoredNode(written)}`);
    await inspector.zadd('ppn-fleet:nodes', 1_000, 'old');
    expect(await upgraded.ownersOf(['o'], 'n2')).toEqual(new Map([['o', 'old']]));
    expect(await inspector.hget(VM_HOLDERS, 'o')).toBeNull();
    // Indexed again at the next lookup once it has stopped writing (here: by a new process).
    expect(await (await controller()).ownersOf(['o'], 'n2')).toEqual(new Map([['o', 'old']]));
    expect(await inspector.hget(VM_HOLDERS, 'o')).toBe('old');
    expect(warningsBut(warn, CREDENTIALS_WARNING)).toEqual([]);
  });

  it("answers owner ids only, never a holder's state, in scripts that each read a bounded part", async () => {
    const nodes = await controller();
    // Six holders of about 900 KB each: more than one script reads.
    const holders = Array.from({ length: 6 }, (_, index) => `big${index}`);
    for (const nodeId of holders) {
      const vmIds = Array.from({ length: 5_000 }, (_, index) => `${nodeId}-${index}`);
      await beat(nodes, nodeId, vmIds);
    }
    const stored = await Promise.all(holders.map((id) => inspector.strlen(`ppn-fleet:node:${id}`)));
    expect(stored.reduce((sum, bytes) => sum + bytes, 0)).toBeGreaterThan(4 * 1024 * 1024);
    // The index as a write of an earlier version leaves it: big0 named for a VM it never held.
    await inspector.hset(VM_HOLDERS, 'elsewhere', 'big0');
    expect(await nodes.ownersOf(['x'], 'n2')).toEqual(new Map());
    const client = connections[0].client as unknown as Record<string, unknown>;
    const ownersOf = jest.spyOn(client, 'fleetOwnersOf' as never);

    const asked = [...holders.map((id) => `${id}-4999`), 'elsewhere', 'unknown'];
    expect(await nodes.ownersOf(asked, 'n2')).toEqual(
      new Map(holders.map((id) => [`${id}-4999`, id])),
    );
    const replies = await Promise.all(
      ownersOf.mock.results.map(({ value }) => value as Promise<unknown[]>),
    );
    expect(replies.length).toBeGreaterThan(1);
    for (const reply of replies) {
      expect(JSON.stringify(reply).length).toBeLessThan(1_000);
    }
    expect(await inspector.hexists(VM_HOLDERS, 'elsewhere')).toBe(0);
  });

  it('never trusts an index deleted on its own (evicted, or by hand): it is made whole again', async () => {
    const nodes = await controller();
    await beat(nodes, 'n1', ['a']);
    expect(await nodes.ownersOf(['a'], 'n2')).toEqual(new Map([['a', 'n1']]));
    await inspector.del(VM_HOLDERS);
    // A write in between recreates the hash with only its own entry.
    await beat(nodes, 'n3', ['c']);
    const both = new Map([
      ['a', 'n1'],
      ['c', 'n3'],
    ]);
    // This process made it whole a moment ago: every node read instead, until it may again.
    expect(await nodes.ownersOf(['a', 'c'], 'n2')).toEqual(both);
    expect(await vmHolderEntries()).toEqual({ c: 'n3' });
    // Another (or this one INDEX_INTERVAL_MS later) makes it whole.
    expect(await (await controller()).ownersOf(['a', 'c'], 'n2')).toEqual(both);
    expect(await vmHolderEntries()).toEqual({ a: 'n1', c: 'n3' });
  });

  it('marks no index whole that was deleted while being made whole', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const nodes = await controller();
    // Two batches' worth of VM ids.
    const many = Array.from({ length: 1_500 }, (_, index) => `v${index}`);
    await beat(nodes, 'n1', many);
    await beat(
      nodes,
      'n3',
      many.map((vmId) => `w${vmId}`),
    );
    await inspector.del(VM_HOLDERS);
    const client = connections[0].client as unknown as Record<
      string,
      (...args: unknown[]) => Promise<unknown>
    >;
    const addVmHolders = client.fleetAddVmHolders.bind(client);
    let batches = 0;
    client.fleetAddVmHolders = async (...args) => {
      const added = await addVmHolders(...args);
      if (++batches === 1) await inspector.del(VM_HOLDERS);
      return added;
    };
    expect(await nodes.ownersOf(['v1499', 'wv0'], 'n2')).toEqual(
      new Map([
        ['v1499', 'n1'],
        ['wv0', 'n3'],
      ]),
    );
    expect(batches).toBe(2);
    expect(await inspector.hexists(VM_HOLDERS, 'v0')).toBe(0);
    // Made whole by the next lookup (here: a new process), and trusted.
    const next = await controller();
    expect(await next.ownersOf(['v0', 'wv1499'], 'n2')).toEqual(
      new Map([
        ['v0', 'n1'],
        ['wv1499', 'n3'],
      ]),
    );
    expect(Object.keys(await vmHolderEntries())).toHaveLength(3_000);
    expect(warningsBut(warn, CREDENTIALS_WARNING)).toEqual([]);
  });
});

describe('NodesRepository.forgetSilentBeyond in Redis', () => {
  it('forgets a fleet-wide drop in bounded scripts, taking their VM ids out of the index', async () => {
    const store = await stores.find(([name]) => name === 'in Redis')![1]();
    const nodes = store.repository;
    const client = (nodes as unknown as { redis: Record<string, unknown> }).redis;
    const forgetSilent = jest.spyOn(client, 'fleetForgetSilent' as never);
    try {
      const nodeIds = Array.from({ length: 1_200 }, (_, index) => `n${index}`);
      for (const [index, nodeId] of nodeIds.entries()) {
        const vms = [vm(`${nodeId}-a`), vm(`${nodeId}-b`)];
        await nodes.update(nodeId, acceptHeartbeat(heartbeat(nodeId, { vms }), 1_000 + index));
      }
      await nodes.dropStale(10_000);
      const forgotten = await nodes.forgetSilentBeyond(100);
      expect(forgotten.map((state) => state.node_id)).toEqual(nodeIds.slice(0, 1_100));
      // Each script forgot at most 500 nodes: it read and decoded each one's state.
      const replies = await Promise.all(
        forgetSilent.mock.results.map(({ value }) => value as Promise<unknown[]>),
      );
      expect(replies.map((reply) => reply.length - 1)).toEqual([500, 500, 100]);
      expect((await nodes.listAll()).map((state) => state.node_id).sort()).toEqual(
        nodeIds.slice(1_100).sort(),
      );
      expect(await store.indexedVmIds()).toEqual(
        nodeIds
          .slice(1_100)
          .flatMap((nodeId) => [`${nodeId}-a`, `${nodeId}-b`])
          .sort(),
      );
      expect(await nodes.forgetSilentBeyond(100)).toEqual([]);
    } finally {
      forgetSilent.mockRestore();
      await store.close();
    }
  });
});

describe.each(stores)('KeyClaims %s', (_name, open) => {
  let store: Store;
  let claims: KeyClaims;
  const keyHash = 'a'.repeat(64);
  const spawnKey = `${keyHash}.${'1'.repeat(64)}`;
  const otherBody = `${keyHash}.${'2'.repeat(64)}`;

  beforeEach(async () => {
    store = await open();
    claims = store.keyClaims;
  });

  afterEach(async () => {
    await store.close();
  });

  it('gives a key to one of many simultaneous takers and names its spawn key to the others', async () => {
    const taken = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        claims.claim(keyHash, index === 0 ? spawnKey : otherBody, 60_000),
      ),
    );
    const own = taken.filter((claim) => claim.kind === 'own');
    expect(own).toHaveLength(1);
    const holder = taken.indexOf(own[0]) === 0 ? spawnKey : otherBody;
    for (const claim of taken.filter((claim) => claim.kind === 'others')) {
      expect(claim).toEqual({ kind: 'others', spawnKey: holder, expiresInMs: expect.any(Number) });
      expect(claim.kind === 'others' && claim.expiresInMs).toBeGreaterThan(50_000);
      expect(claim.kind === 'others' && claim.expiresInMs).toBeLessThanOrEqual(60_000);
    }
    // Another key is another claim.
    expect(
      (await claims.claim('b'.repeat(64), `${'b'.repeat(64)}.${'1'.repeat(64)}`, 60_000)).kind,
    ).toBe('own');
  });

  it('ends a claim on release, and a release ends only the claim it took', async () => {
    const first = await claims.claim(keyHash, spawnKey, 60_000);
    if (first.kind !== 'own') throw new Error('not claimed');
    await claims.release(first);
    expect(await store.leftoverKeys()).toBe(0);

    const second = await claims.claim(keyHash, spawnKey, 60_000);
    expect(second.kind).toBe('own');
    // The first taking, released again late (its holder thought it still had it): no effect.
    await claims.release(first);
    expect((await claims.claim(keyHash, spawnKey, 60_000)).kind).toBe('others');
    if (second.kind === 'own') await claims.release(second);
    expect(await store.leftoverKeys()).toBe(0);
  });

  it('ends a claim nobody released at its deadline: the next taker gets it', async () => {
    const dead = await claims.claim(keyHash, spawnKey, 100);
    expect(dead.kind).toBe('own');
    expect((await claims.claim(keyHash, spawnKey, 60_000)).kind).toBe('others');
    await new Promise((resolve) => setTimeout(resolve, store.claimEndsWithinMs));
    const next = await claims.claim(keyHash, otherBody, 60_000);
    expect(next.kind).toBe('own');
    // The dead holder's late release leaves the new claim in place.
    if (dead.kind === 'own') await claims.release(dead);
    expect(await claims.claim(keyHash, spawnKey, 60_000)).toMatchObject({
      kind: 'others',
      spawnKey: otherBody,
    });
  });

  it('keeps a dispatch unresolved until recorded again, and forgets it only while it names that VM', async () => {
    const unresolved = {
      spawnKey,
      nodeId: 'n1',
      vmId: 'vm-1',
      unresolvedUntilMs: 1_786_017_620_000,
    };
    await claims.recordDispatch(keyHash, unresolved, 60_000);
    expect(await claims.dispatchOf(keyHash)).toEqual(unresolved);
    // The agent accepted it: resolved.
    await claims.recordDispatch(keyHash, { spawnKey, nodeId: 'n1', vmId: 'vm-1' }, 60_000);
    expect(await claims.dispatchOf(keyHash)).toEqual({ spawnKey, nodeId: 'n1', vmId: 'vm-1' });
    // A refusal of another dispatch (an earlier one's) leaves it; this one's forgets it.
    await claims.forgetDispatch(keyHash, 'vm-0');
    expect(await claims.dispatchOf(keyHash)).toMatchObject({ vmId: 'vm-1' });
    await claims.forgetDispatch(keyHash, 'vm-1');
    expect(await claims.dispatchOf(keyHash)).toBeUndefined();
    expect(await store.leftoverKeys()).toBe(0);
  });
});

describe('NodesRepository in Redis, with no controller to sweep', () => {
  it('keeps the key of a node listing VMs with no expiry, so its VMs outlive every controller', async () => {
    await inspector.flushdb();
    const connection = new RedisConnection(redisServer.url, redisServer.url);
    await new Promise((resolve) => connection.client.once('ready', resolve));
    const nodes = new RedisNodesRepository(connection);
    try {
      await nodes.update(
        'with-vms',
        acceptHeartbeat(heartbeat('with-vms', { vms: [vm('v1')] }), 1_000),
      );
      await nodes.update('without', acceptHeartbeat(heartbeat('without', { vms: [] }), 1_000));
      expect(await inspector.pttl('ppn-fleet:node:with-vms')).toBe(-1);
      expect(await inspector.pttl('ppn-fleet:node:without')).toBeGreaterThan(0);
      // Out of the live reads by its age alone; the first sweep keeps it, silent, for its VMs.
      expect(await nodes.listLive(liveSince(40_000))).toEqual([]);
      expect(
        (await nodes.dropStale(liveSince(120_000))).map((state) => state.node_id).sort(),
      ).toEqual(['with-vms', 'without']);
      expect((await nodes.listAll()).map((state) => state.node_id)).toEqual(['with-vms']);
      // A node whose VMs are gone expires as any other.
      await nodes.update(
        'drained',
        acceptHeartbeat(heartbeat('drained', { vms: [vm('d1')] }), 200_000),
      );
      expect(await inspector.pttl('ppn-fleet:node:drained')).toBe(-1);
      await nodes.update('drained', acceptHeartbeat(heartbeat('drained', { vms: [] }), 201_000));
      expect(await inspector.pttl('ppn-fleet:node:drained')).toBeGreaterThan(0);
    } finally {
      await connection.onApplicationShutdown();
    }
  });
});

describe('NodesRepository in Redis with a key that is no node state', () => {
  it('leaves it out of every read, in one warning line, and drops it like a silent node', async () => {
    const store = await stores.find(([name]) => name === 'in Redis')![1]();
    const nodes = store.repository;
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      await nodes.update('good', acceptHeartbeat(heartbeat('good'), 1_000));
      await nodes.update('bad', acceptHeartbeat(heartbeat('bad'), 1_000));
      // As another program (or a broken write) might leave it: a null hold, no record fields.
      const key = 'ppn-fleet:node:bad';
      const [version] = (await inspector.get(key))!.split('\n');
      const state = { node_id: 'bad', received_at_ms: 1_000, vms: [null], holds: { x: null } };
      await inspector.set(key, `${version}\n{"node_id":"bad"}\n${JSON.stringify(state)}`);

      expect((await nodes.listLive(0)).map(({ node_id }) => node_id)).toEqual(['good']);
      expect((await nodes.listLiveRecords(0)).map(({ node_id }) => node_id)).toEqual(['good']);
      expect(await nodes.findLive('bad', 0)).toBeUndefined();
      const dropped = await nodes.dropStale(Number.MAX_SAFE_INTEGER);
      expect(dropped.map(({ node_id }) => node_id)).toEqual(['good']);
      expect(await store.leftoverKeys()).toBe(0);
      expect(warningsBut(warn, CREDENTIALS_WARNING)).toEqual([
        [expect.stringContaining('no node state')],
      ]);
    } finally {
      warn.mockRestore();
      await store.close();
    }
  });
});

/** The test's redis-server takes commands without a password: the controller says so at each connection. */
const CREDENTIALS_WARNING = /runs commands without credentials/;

/** The warnings logged, but those matching `expected`. */
function warningsBut(warn: jest.SpyInstance, expected: RegExp): unknown[][] {
  return warn.mock.calls.filter(([message]) => !expected.test(String(message)));
}

function byNodeId(a: { node_id: string }, b: { node_id: string }): number {
  return a.node_id.localeCompare(b.node_id);
}

describe.each(stores)('VmMoves %s', (_name, open) => {
  let store: Store;

  beforeEach(async () => {
    store = await open();
  });

  afterEach(async () => {
    await store.close();
  });

  it('keeps the last move of each VM and answers those asked for, none for the others', async () => {
    const moves = store.vmMoves;
    expect(await moves.movesOf([])).toEqual(new Map());
    await moves.record('vm-a', { nodeId: 'node-b', atWallMs: 1_000 });
    await moves.record('vm-a', { nodeId: 'node-c', atWallMs: 2_000 });
    await moves.record('vm-b', { nodeId: 'node-b', atWallMs: 3_000 });
    expect(await moves.movesOf(['vm-a', 'vm-b', 'vm-none'])).toEqual(
      new Map([
        ['vm-a', { nodeId: 'node-c', atWallMs: 2_000 }],
        ['vm-b', { nodeId: 'node-b', atWallMs: 3_000 }],
      ]),
    );
  });
});
