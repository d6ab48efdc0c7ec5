import { createRequest } from '../../../../test/factories/create-request.factory';
import { Logger } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as prometheus from 'prom-client';
import {
  CreateVmRequest,
  SpawnVmRequest,
  MAX_EXPORTED_NODES,
  NodeHeartbeat,
  VmRecord,
  VmState,
  holdRam,
} from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { heartbeat as agentHeartbeat, vmRecord } from '../../../../test/support/heartbeats';
import { metricTypes, sampleValue } from '../../../../test/support/prometheus-text';
import { InMemoryKeyClaims } from '../nodes/memory/in-memory-key-claims.repository';
import { InMemoryNodesRepository } from '../nodes/memory/in-memory-nodes.repository';
import { LiveNodesReader } from '../nodes/live-nodes.reader';
import { NodeTokens } from '../nodes/node-tokens';
import { NodesService } from '../nodes/nodes.service';
import { Spawned, VmHostClient } from '../vms/vm-host.client';
import { AgentCallError, VmHostClientSettings } from '../vms/agent-calls';
import { VmPlacementService } from '../vms/vm-placement.service';
import { FleetMetrics, exportedNodes, exportedVmCopies } from './fleet-metrics.service';
import { LiveNodeReading, NodesReading } from './live-nodes.source';

const MIB = 1024 * 1024;

/** n's heartbeat, from 10.8.0.1, stamped `second` seconds past 12:00 (the order the controller judges by). */
function heartbeat(node_id: string, second: number, extra: Partial<NodeHeartbeat> = {}) {
  const timestamp_utc = `2026-08-06T12:00:${String(second).padStart(2, '0')}Z`;
  return agentHeartbeat({ node_id, wg_ip: '10.8.0.1', timestamp_utc, ...extra });
}

/** A live node as the store would give it to the metrics. */
const reading: LiveNodeReading = {
  node_id: 'n1',
  ram_available_mb: 1024,
  ram_total_mb: 2048,
  vm_states: [],
  heartbeat_age_ms: 0,
  reserved: false,
  fenced_vms: 0,
  credential: 'own',
};

/** A reading of live nodes only, no silent VMs. */
function liveOnly(live: LiveNodeReading[]): NodesReading {
  return { live, silentNodeVms: 0, vmCopies: [] };
}

describe('FleetMetrics', () => {
  let clock: FakeClock;
  let repository: InMemoryNodesRepository;
  let metrics: FleetMetrics;
  let nodes: NodesService;

  const scraped = async (): Promise<string> => (await metrics.scrape()).body;

  beforeEach(() => {
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    clock = new FakeClock();
    repository = new InMemoryNodesRepository();
    const liveNodes = new LiveNodesReader(repository, clock);
    metrics = new FleetMetrics({
      prometheus,
      readNodes: () => liveNodes.read(),
      version: '1.2.3',
    });
    nodes = new NodesService(repository, clock, metrics, new NodeTokens());
  });

  afterEach(() => jest.restoreAllMocks());

  it('counts each heartbeat by what became of it', async () => {
    await nodes.acceptHeartbeat(heartbeat('n1', 0));
    await nodes.acceptHeartbeat(heartbeat('n2', 0));
    // The clock follows the stamps: a stamp ahead of it would not be trusted to order beats.
    clock.advance(10_000);
    await nodes.acceptHeartbeat(heartbeat('n1', 10));
    await nodes.acceptHeartbeat(heartbeat('n1', 5)); // older than the stored one: ignored
    clock.advance(10_000);
    await nodes.acceptHeartbeat(heartbeat('n1', 20, { boot_id: 'boot-2' }));
    metrics.countHeartbeat('refused');

    const text = await scraped();
    const count = (outcome: string) =>
      sampleValue(text, `ppn_fleet_heartbeats_total{outcome="${outcome}"}`);
    expect(count('joined')).toBe(2);
    expect(count('refreshed')).toBe(1);
    expect(count('out_of_order')).toBe(1);
    expect(count('taken_over')).toBe(1);
    expect(count('refused')).toBe(1);
  });

  it('counts a node id two agents take from each other once, however many beats', async () => {
    expect(sampleValue(await scraped(), 'ppn_fleet_node_id_conflicts_total')).toBe(0);
    for (let beat = 0; beat < 6; beat++) {
      clock.advance(5_000);
      const agent = beat % 2 === 0 ? 'a' : 'b';
      await nodes.acceptHeartbeat(heartbeat('n1', beat, { boot_id: `boot-${agent}` }));
    }
    expect(sampleValue(await scraped(), 'ppn_fleet_node_id_conflicts_total')).toBe(1);
  });

  it('reports the live nodes as they are when scraped, and counts the sweep drops', async () => {
    await nodes.acceptHeartbeat(heartbeat('n1', 0));
    await nodes.acceptHeartbeat(heartbeat('n2', 0));
    expect(sampleValue(await scraped(), 'ppn_fleet_nodes')).toBe(2);

    clock.advance(20_000);
    await nodes.acceptHeartbeat(heartbeat('n2', 20));
    clock.advance(15_000);
    // n1 is silent for 35 s: reads no longer count it, before the sweep and after it.
    expect(sampleValue(await scraped(), 'ppn_fleet_nodes')).toBe(1);
    await nodes.dropStaleNodes();
    await nodes.dropStaleNodes();

    const text = await scraped();
    expect(sampleValue(text, 'ppn_fleet_nodes')).toBe(1);
    expect(sampleValue(text, 'ppn_fleet_drops_total')).toBe(1);
    expect(sampleValue(text, 'ppn_fleet_sweep_duration_seconds_count')).toBe(2);
  });

  it('counts the VMs listed that no live agent manages, at scrape time', async () => {
    const vms = [vmRecord('vm-1'), vmRecord('vm-2')];
    await nodes.acceptHeartbeat(heartbeat('n1', 0, { vms }));
    expect(sampleValue(await scraped(), 'ppn_fleet_silent_node_vms')).toBe(0);
    clock.advance(31_000);
    // Silent: counted before the sweep and after it.
    expect(sampleValue(await scraped(), 'ppn_fleet_silent_node_vms')).toBe(2);
    await nodes.dropStaleNodes();
    expect(sampleValue(await scraped(), 'ppn_fleet_silent_node_vms')).toBe(2);
    // Another agent speaks for n1, listing vm-2 only: vm-1 is still no live agent's.
    await nodes.acceptHeartbeat(
      heartbeat('n1', 31, { boot_id: 'boot-other', vms: [vmRecord('vm-2')] }),
    );
    expect(sampleValue(await scraped(), 'ppn_fleet_silent_node_vms')).toBe(1);
    expect(sampleValue(await scraped(), 'ppn_fleet_nodes')).toBe(1);
  });

  it("shows each VM's copy age and interval, and the VMs that want copies and have none", async () => {
    // The clock starts at 12:00:00; vm-1 started at 11:00, copied at 11:59:00 to n2.
    const policy = { count: 1, every_s: 60 };
    await nodes.acceptHeartbeat(
      heartbeat('n1', 0, {
        vms: [
          { ...vmRecord('vm-1'), copies: policy },
          { ...vmRecord('vm-2', { started_at: '2026-08-06T11:58:00Z' }), copies: policy },
          { ...vmRecord('vm-3', { state: 'Stopped' as VmRecord['state'] }), copies: policy },
          { ...vmRecord('vm-4'), copies: { count: 0, every_s: 60 } },
          vmRecord('vm-5'),
        ],
      }),
    );
    await nodes.acceptHeartbeat(
      heartbeat('n2', 0, {
        replicas: [
          { vm_id: 'vm-1', source_node_id: 'n1', copied_at: '2026-08-06T11:59:00Z', size_bytes: 1 },
        ],
      }),
    );
    let text = await scraped();
    const series = (name: string, vm: string) =>
      sampleValue(text, `${name}{vm_id="${vm}",node_id="n1"}`);
    expect(series('ppn_fleet_vm_copy_age_seconds', 'vm-1')).toBe(60);
    expect(series('ppn_fleet_vm_copy_interval_seconds', 'vm-1')).toBe(60);
    expect(series('ppn_fleet_vm_uncopied_seconds', 'vm-2')).toBe(120);
    // A stopped VM is copied once: no interval to be late on; it still wants a copy.
    expect(text).not.toMatch(/^ppn_fleet_vm_copy_interval_seconds\{vm_id="vm-3"/m);
    // Copies 0, or no policy reported: no series at all.
    expect(text).not.toMatch(/^ppn_fleet_vm_\w+\{vm_id="vm-[45]"/m);
    expect(sampleValue(text, 'ppn_fleet_vms_without_copy')).toBe(2);

    // The holder drops out: nothing says the copy is still there.
    clock.advance(31_000);
    text = await scraped();
    expect(text).not.toMatch(/^ppn_fleet_vm_copy_age_seconds/m);
    expect(sampleValue(text, 'ppn_fleet_vms_without_copy')).toBe(3);
  });

  it('shows per-VM copy series of at most MAX_EXPORTED_VM_COPIES VMs, the first by id', () => {
    const vms = ['vm-c', 'vm-a', 'vm-b'].map((vm_id) => ({
      vm_id,
      node_id: 'n1',
      every_s: 60,
      wanted: true,
      copy_age_ms: 1,
      uncopied_ms: null,
    }));
    expect(exportedVmCopies(vms, 2).map(({ vm_id }) => vm_id)).toEqual(['vm-a', 'vm-b']);
    expect(exportedVmCopies(vms)).toHaveLength(3);
  });

  it("counts a node listing another node's VM id once per episode, and the silent VM stays counted", async () => {
    await nodes.acceptHeartbeat(heartbeat('n1', 0, { vms: [vmRecord('vm-1')] }));
    clock.advance(31_000);
    await nodes.dropStaleNodes();
    expect(sampleValue(await scraped(), 'ppn_fleet_silent_node_vms')).toBe(1);
    for (let beat = 0; beat < 3; beat++) {
      await nodes.acceptHeartbeat(heartbeat('n2', 31 + beat, { vms: [vmRecord('vm-1')] }));
    }
    const text = await scraped();
    expect(sampleValue(text, 'ppn_fleet_vm_id_conflicts_total')).toBe(1);
    expect(sampleValue(text, 'ppn_fleet_silent_node_vms')).toBe(1);
  });

  it('counts VM creates by outcome and times every dispatch to an agent, failed or not', async () => {
    const spawn = jest.fn<Promise<Spawned>, [unknown, SpawnVmRequest, string]>();
    const vms = new VmPlacementService(
      repository,
      new InMemoryKeyClaims(),
      { spawn } as unknown as VmHostClient,
      new VmHostClientSettings(),
      clock,
      metrics,
    );
    const create = (extra: Partial<CreateVmRequest> = {}) =>
      vms.createVm(createRequest({ ram_mb: 1024, vcpu_count: 1, ...extra }));
    // Both outcomes exported at 0 before any dispatch: the first one is a rise rate() sees.
    const before = await scraped();
    expect(sampleValue(before, 'ppn_fleet_dispatch_duration_seconds_count{outcome="ok"}')).toBe(0);
    expect(sampleValue(before, 'ppn_fleet_dispatch_duration_seconds_count{outcome="failed"}')).toBe(
      0,
    );
    await nodes.acceptHeartbeat(heartbeat('n1', 0)); // 12,288 MB available
    spawn.mockImplementationOnce((_node, request) =>
      Promise.resolve({
        vm: {
          vm_id: request.vm_id,
          vm_type: 'web',
          state: 'Provisioning',
          ram_alloc_mb: 1024,
          vcpu_count: 1,
          started_at: null,
          tenant_id: null,
          host_ports: [],
        } as unknown as VmRecord,
        replayed: false,
      }),
    );
    await create();
    spawn.mockRejectedValueOnce(
      new AgentCallError('agent of node n1 could not be reached', 'unreachable', true),
    );
    await expect(create()).rejects.toThrow(AgentCallError);
    await expect(create({ preferred_node: 'n9' })).rejects.toThrow('not enrolled');
    await expect(create({ ram_mb: 65_536 })).rejects.toThrow('no node has');

    const text = await scraped();
    const placements = (outcome: string) =>
      sampleValue(text, `ppn_fleet_placements_total{outcome="${outcome}"}`);
    expect(placements('placed')).toBe(1);
    expect(placements('agent_failed')).toBe(1);
    expect(placements('refused_unfit')).toBe(1);
    expect(placements('refused_no_room')).toBe(1);
    const dispatches = (outcome: string) =>
      sampleValue(text, `ppn_fleet_dispatch_duration_seconds_count{outcome="${outcome}"}`);
    expect(dispatches('ok')).toBe(1);
    expect(dispatches('failed')).toBe(1);
    expect(sampleValue(text, 'ppn_fleet_dispatch_failures_total')).toBe(1);
  });

  it('shows each live node: its RAM, its VMs by state, its heartbeat age, whether reserved', async () => {
    const running = (vm_id: string) => vmRecord(vm_id, { state: VmState.Running });
    await nodes.acceptHeartbeat(
      heartbeat('n1', 0, {
        ram_total_mb: 16384,
        ram_used_mb: 4096,
        vms: [running('vm-a'), running('vm-b'), vmRecord('vm-c', { state: VmState.Error })],
      }),
    );
    await nodes.acceptHeartbeat(heartbeat('n2', 0, { ram_total_mb: 8192, reserved: true }));
    // 2 GiB held on n1 for a VM being placed there, for 20 s.
    const held = await repository.update(
      'n1',
      holdRam(
        {
          holdId: 'hold-1',
          ramMb: 2048,
          requiredFreeMb: 2048,
          nowMs: clock.now(),
          expiresAtMs: clock.now() + 20_000,
          spawnKey: 'key-1',
        },
        clock.now() - 30_000,
      ),
    );
    expect(held).toBe(true);
    clock.advance(2_500);

    let text = await scraped();
    const value = (sample: string) => sampleValue(text, sample);
    expect(value('ppn_fleet_node_ram_total_bytes{node_id="n1"}')).toBe(16384 * MIB);
    expect(value('ppn_fleet_node_ram_available_bytes{node_id="n1"}')).toBe(
      (16384 - 4096 - 2048) * MIB,
    );
    expect(value('ppn_fleet_node_ram_total_bytes{node_id="n2"}')).toBe(8192 * MIB);
    expect(value('ppn_fleet_node_ram_available_bytes{node_id="n2"}')).toBe((8192 - 4096) * MIB);
    expect(value('ppn_fleet_node_vms{node_id="n1",state="Running"}')).toBe(2);
    expect(value('ppn_fleet_node_vms{node_id="n1",state="Error"}')).toBe(1);
    expect(value('ppn_fleet_node_vms{node_id="n1",state="Stopped"}')).toBe(0);
    expect(value('ppn_fleet_node_vms{node_id="n1",state="Provisioning"}')).toBe(0);
    expect(value('ppn_fleet_node_vms{node_id="n2",state="Running"}')).toBe(0);
    expect(value('ppn_fleet_node_heartbeat_age_seconds{node_id="n1"}')).toBe(2.5);
    expect(value('ppn_fleet_node_reserved{node_id="n1"}')).toBe(0);
    expect(value('ppn_fleet_node_reserved{node_id="n2"}')).toBe(1);

    // Past its deadline the hold no longer counts, before the sweep ends it.
    clock.advance(20_000);
    text = await scraped();
    expect(value('ppn_fleet_node_ram_available_bytes{node_id="n1"}')).toBe((16384 - 4096) * MIB);
    expect(value('ppn_fleet_node_heartbeat_age_seconds{node_id="n1"}')).toBe(22.5);
  });

  it("drops a node's series with the node, and shows it again when it comes back", async () => {
    await nodes.acceptHeartbeat(heartbeat('n1', 0));
    await nodes.acceptHeartbeat(heartbeat('n2', 0));
    clock.advance(20_000);
    await nodes.acceptHeartbeat(heartbeat('n2', 20));
    clock.advance(15_000);
    await nodes.dropStaleNodes();

    let text = await scraped();
    expect(text).not.toContain('node_id="n1"');
    for (const name of [
      'ppn_fleet_node_ram_available_bytes',
      'ppn_fleet_node_ram_total_bytes',
      'ppn_fleet_node_heartbeat_age_seconds',
      'ppn_fleet_node_reserved',
    ]) {
      expect(sampleValue(text, `${name}{node_id="n2"}`)).toBeDefined();
    }
    expect(sampleValue(text, 'ppn_fleet_node_vms{node_id="n2",state="Running"}')).toBe(0);

    await nodes.acceptHeartbeat(heartbeat('n1', 35));
    text = await scraped();
    expect(sampleValue(text, 'ppn_fleet_node_heartbeat_age_seconds{node_id="n1"}')).toBe(0);
  });

  it('counts the live nodes by the credential their last heartbeat was taken with', async () => {
    const byCredential = new FleetMetrics({
      prometheus,
      readNodes: () =>
        Promise.resolve(
          liveOnly([
            reading,
            { ...reading, node_id: 'n2', credential: 'previous-secret' },
            { ...reading, node_id: 'n3', credential: 'shared' },
            { ...reading, node_id: 'n4', credential: 'shared' },
            { ...reading, node_id: 'n5', credential: null },
          ]),
        ),
      version: '1.2.3',
    });
    const text = (await byCredential.scrape()).body;
    const count = (credential: string) =>
      sampleValue(text, `ppn_fleet_nodes_by_credential{credential="${credential}"}`);
    expect([count('own'), count('previous_secret'), count('shared'), count('none')]).toEqual([
      1, 1, 2, 1,
    ]);
    // Every kind exported, at 0 when no node is on it: "none on shared" is a plain comparison.
    expect(sampleValue(await scraped(), 'ppn_fleet_nodes_by_credential{credential="shared"}')).toBe(
      0,
    );
  });

  it('shows per-node series of at most MAX_EXPORTED_NODES nodes, the first by id, and counts the rest', async () => {
    const id = (index: number) => `n${String(index).padStart(5, '0')}`;
    // Listed out of order, the most recent beats last: the choice is by id, not by age.
    const many = Array.from({ length: MAX_EXPORTED_NODES + 2 }, (_, index) => ({
      ...reading,
      node_id: id(MAX_EXPORTED_NODES + 1 - index),
      heartbeat_age_ms: MAX_EXPORTED_NODES + 1 - index,
    }));
    const crowded = new FleetMetrics({
      prometheus,
      readNodes: () => Promise.resolve(liveOnly(many)),
      version: '1.2.3',
    });
    const text = (await crowded.scrape()).body;
    expect(sampleValue(text, 'ppn_fleet_nodes')).toBe(MAX_EXPORTED_NODES + 2);
    expect(sampleValue(text, 'ppn_fleet_nodes_not_exported')).toBe(2);
    for (const name of ['ppn_fleet_node_ram_total_bytes', 'ppn_fleet_node_heartbeat_age_seconds']) {
      expect(text.match(new RegExp(`^${name}\\{`, 'gm'))).toHaveLength(MAX_EXPORTED_NODES);
    }
    expect(text.match(/^ppn_fleet_node_vms\{/gm)).toHaveLength(
      MAX_EXPORTED_NODES * Object.values(VmState).length,
    );
    expect(text).toContain(`node_id="${id(0)}"`);
    expect(text).toContain(`node_id="${id(MAX_EXPORTED_NODES - 1)}"`);
    expect(text).not.toContain(`node_id="${id(MAX_EXPORTED_NODES)}"`);
    expect(text).not.toContain(`node_id="${id(MAX_EXPORTED_NODES + 1)}"`);
    expect(exportedNodes(many.slice(0, 3), 5)).toEqual(many.slice(0, 3));

    // Within the cap: none left out; the store unreadable: unknown.
    expect(sampleValue(await scraped(), 'ppn_fleet_nodes_not_exported')).toBe(0);
    const unreadable = new FleetMetrics({
      prometheus,
      readNodes: () => Promise.reject(new Error('store down')),
      version: '1.2.3',
    });
    expect(sampleValue((await unreadable.scrape()).body, 'ppn_fleet_nodes_not_exported')).toBeNaN();
  });

  it('says which version runs, in ppn_fleet_build_info', async () => {
    const text = await scraped();
    expect(sampleValue(text, 'ppn_fleet_build_info{version="1.2.3"}')).toBe(1);
    expect(text.match(/^ppn_fleet_build_info/gm)).toHaveLength(1);
  });

  it('names exactly its metrics in the metrics table of docs/operating.md', async () => {
    const readme = readFileSync(join(__dirname, '../../../../docs/operating.md'), 'utf8');
    const documented = [
      ...readme.matchAll(/^\| `(ppn_fleet_\w+)(?:\{[\w,]+\})?` \| (\w+) \|/gm),
    ].map(([, name, type]) => [name, type]);
    const declared = [...metricTypes(await scraped())].filter(([name]) =>
      name.startsWith('ppn_fleet_'),
    );
    expect(Object.fromEntries(documented)).toEqual(Object.fromEntries(declared));
  });

  it('declares its metrics with their types, beside the default process metrics', async () => {
    const types = metricTypes(await scraped());
    expect(Object.fromEntries([...types].filter(([name]) => name.startsWith('ppn_')))).toEqual({
      ppn_fleet_nodes: 'gauge',
      ppn_fleet_nodes_by_credential: 'gauge',
      ppn_fleet_silent_node_vms: 'gauge',
      ppn_fleet_nodes_not_exported: 'gauge',
      ppn_fleet_heartbeats_total: 'counter',
      ppn_fleet_drops_total: 'counter',
      ppn_fleet_placements_total: 'counter',
      ppn_fleet_dispatch_duration_seconds: 'histogram',
      ppn_fleet_dispatch_failures_total: 'counter',
      ppn_fleet_node_id_conflicts_total: 'counter',
      ppn_fleet_vm_id_conflicts_total: 'counter',
      ppn_fleet_sweep_duration_seconds: 'histogram',
      ppn_fleet_leader: 'gauge',
      ppn_fleet_vm_recoveries_total: 'counter',
      ppn_fleet_build_info: 'gauge',
      ppn_fleet_node_ram_available_bytes: 'gauge',
      ppn_fleet_node_ram_total_bytes: 'gauge',
      ppn_fleet_node_vms: 'gauge',
      ppn_fleet_node_heartbeat_age_seconds: 'gauge',
      ppn_fleet_node_reserved: 'gauge',
      ppn_fleet_node_fenced_vms: 'gauge',
      ppn_fleet_vm_copy_age_seconds: 'gauge',
      ppn_fleet_vm_copy_interval_seconds: 'gauge',
      ppn_fleet_vm_uncopied_seconds: 'gauge',
      ppn_fleet_vms_without_copy: 'gauge',
    });
    expect(types.get('process_resident_memory_bytes')).toBe('gauge');
  });

  it('says NaN, not 0, for the live nodes while the store cannot be read, and still scrapes', async () => {
    let unreadable = false;
    const outage = new FleetMetrics({
      prometheus,
      readNodes: () =>
        unreadable
          ? Promise.reject(new Error('Redis unavailable'))
          : Promise.resolve(liveOnly([reading])),
      version: '1.2.3',
    });
    expect(sampleValue((await outage.scrape()).body, 'ppn_fleet_node_reserved{node_id="n1"}')).toBe(
      0,
    );
    unreadable = true;
    outage.countHeartbeat('refused');
    const text = (await outage.scrape()).body;
    expect(sampleValue(text, 'ppn_fleet_nodes')).toBeNaN();
    expect(sampleValue(text, 'ppn_fleet_heartbeats_total{outcome="refused"}')).toBe(1);
    // No per-node series: a node is not known to be anything while the store is unreadable.
    expect(text).not.toMatch(/^ppn_fleet_node_\w+{node_id=/m);
    expect(sampleValue(text, 'ppn_fleet_build_info{version="1.2.3"}')).toBe(1);
  });

  it('reads the store once per scrape for all its gauges, once for scrapes that arrive together, and again for a later one', async () => {
    let reads = 0;
    const shared = new FleetMetrics({
      prometheus,
      readNodes: async () => {
        reads += 1;
        await new Promise((resolve) => setImmediate(resolve));
        return liveOnly([reading, { ...reading, node_id: 'n2' }, { ...reading, node_id: 'n3' }]);
      },
      version: '1.2.3',
    });
    const bodies = await Promise.all(Array.from({ length: 20 }, () => shared.scrape()));
    expect(bodies.map(({ body }) => sampleValue(body, 'ppn_fleet_nodes'))).toEqual(
      Array<number>(20).fill(3),
    );
    expect(reads).toBe(1);
    await shared.scrape();
    expect(reads).toBe(2);
  });

  it('counts nothing and has nothing to scrape when metrics are off', async () => {
    const off = new FleetMetrics();
    off.countHeartbeat('joined');
    off.observeSweep(0.1, 3);
    await expect(off.timeDispatch(Promise.resolve(7))).resolves.toBe(7);
    expect(off.enabled).toBe(false);
    await expect(off.scrape()).rejects.toThrow('VM_FLEET_METRICS_ADDR');
  });
});
