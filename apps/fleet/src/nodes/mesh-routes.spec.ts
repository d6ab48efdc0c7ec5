import { Logger } from '@nestjs/common';
import { FakeClock } from '../../../../test/support/fake-clock';
import { heartbeat, vmPublishing } from '../../../../test/factories/heartbeat.factory';
import { FleetMetrics } from '../metrics/fleet-metrics.service';
import { InMemoryNodesRepository } from './memory/in-memory-nodes.repository';
import { MeshRoutes } from './mesh-routes';
import { NodeTokens } from './node-tokens';
import { NodesRepository } from './nodes.repository';
import { NodesService } from './nodes.service';

const web = (vmId: string, port: number) => vmPublishing(vmId, port, 80);

describe('MeshRoutes: the routing mesh in heartbeat answers', () => {
  let clock: FakeClock;
  let repository: InMemoryNodesRepository;
  let service: NodesService;
  let warnings: string[];
  let stamp = 0;

  beforeEach(() => {
    clock = new FakeClock();
    repository = new InMemoryNodesRepository();
    const mesh = new MeshRoutes(repository, clock);
    service = new NodesService(
      repository,
      clock,
      new FleetMetrics(),
      new NodeTokens(),
      undefined,
      undefined,
      undefined,
      undefined,
      mesh,
    );
    warnings = [];
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => {
      warnings.push(String(message));
    });
  });

  afterEach(() => jest.restoreAllMocks());

  const beat = (node_id: string, wg_ip: string, vms = [] as ReturnType<typeof web>[]) =>
    service.acceptHeartbeat(
      heartbeat({
        node_id,
        wg_ip,
        vms,
        timestamp_utc: new Date(Date.UTC(2026, 7, 6, 12, 0, stamp++)).toISOString(),
      }),
    );

  it("answers each node the other nodes' routes, reading the store once a second at most", async () => {
    await beat('node-a', '10.8.0.21', [web('vm-web', 8080)]);
    clock.advance(1_000);
    const route = {
      host_port: 8080,
      protocol: 'tcp',
      vm_id: 'vm-web',
      node_id: 'node-a',
      wg_ip: '10.8.0.21',
    };
    expect(await beat('node-b', '10.8.0.22')).toEqual({ accepted: true, mesh_routes: [route] });
    expect(await beat('node-a', '10.8.0.21', [web('vm-web', 8080)])).toEqual({ accepted: true });
    // Moved to node-b: within the second, the table read before (its own VM) is answered; then the new one.
    await beat('node-a', '10.8.0.21');
    await beat('node-b', '10.8.0.22', [web('vm-web', 8080)]);
    expect((await beat('node-a', '10.8.0.21')).mesh_routes).toBeUndefined();
    clock.advance(1_000);
    expect((await beat('node-a', '10.8.0.21')).mesh_routes).toEqual([
      { ...route, node_id: 'node-b', wg_ip: '10.8.0.22' },
    ]);
  });

  it('leaves out a port two VMs publish, warned once while it lasts', async () => {
    await beat('node-a', '10.8.0.21', [web('vm-one', 8080)]);
    await beat('node-b', '10.8.0.22', [web('vm-two', 8080)]);
    clock.advance(1_000);
    expect(await beat('node-c', '10.8.0.23')).toEqual({ accepted: true });
    clock.advance(1_000);
    await beat('node-c', '10.8.0.23');
    expect(warnings).toEqual([
      'host port 8080/tcp is published by vm vm-one on node node-a and vm vm-two on node node-b: left out of the routing mesh (no node forwards it) until one of them no longer publishes it',
    ]);
  });

  it("leaves out the routes of two nodes claiming one address, and a node's ports past 64, warned once", async () => {
    await beat('node-a', '10.8.0.21', [web('vm-web', 8080)]);
    await beat('node-evil', '10.8.0.21', [web('vm-evil', 8081)]);
    const many = Array.from({ length: 70 }, (_, index) => web(`vm-${index}`, 20000 + index));
    await beat('node-s', '10.8.0.30', many);
    clock.advance(1_000);
    const told = (await beat('node-c', '10.8.0.23')).mesh_routes ?? [];
    expect(told.map((route) => route.host_port)).toEqual(
      many.slice(0, 64).map((_, i) => 20000 + i),
    );
    clock.advance(1_000);
    await beat('node-c', '10.8.0.23');
    expect(warnings).toEqual([
      'mesh address 10.8.0.21 is claimed by nodes node-a and node-evil: their routes are left out of the routing mesh until one of them no longer claims it',
      'node node-s publishes more than 64 host ports: its 6 highest are left out of the routing mesh (warned once)',
    ]);
  });

  it('answers the last table for as long as the store fails reads, and none if it never read one', async () => {
    const failing = jest.spyOn(repository, 'listLive').mockRejectedValueOnce(new Error('down'));
    expect((await beat('node-b', '10.8.0.22')).mesh_routes).toBeUndefined();
    failing.mockRestore();
    clock.advance(1_000);
    await beat('node-a', '10.8.0.21', [web('vm-web', 8080)]);
    clock.advance(1_000);
    expect((await beat('node-b', '10.8.0.22')).mesh_routes).toHaveLength(1);
    const listLive = jest.spyOn(repository, 'listLive').mockRejectedValue(new Error('down'));
    clock.advance(1_000);
    expect((await beat('node-b', '10.8.0.22')).mesh_routes).toHaveLength(1);
    clock.advance(600_000);
    // The store still fails: the agents keep forwarding on the last table read.
    expect((await beat('node-b', '10.8.0.22')).mesh_routes).toHaveLength(1);
    expect(listLive).toHaveBeenCalled();
  });

  it('keeps an unchanged table past the second (the memory store tells), rebuilt within a second of a change', async () => {
    await beat('node-a', '10.8.0.21', [web('vm-web', 8080)]);
    await beat('node-b', '10.8.0.22');
    clock.advance(1_000);
    const listLive = jest.spyOn(repository, 'listLive');
    expect((await beat('node-b', '10.8.0.22')).mesh_routes).toHaveLength(1);
    for (let second = 0; second < 8; second++) {
      clock.advance(1_000);
      // Beats that publish the same ports change nothing the table is made of.
      await beat('node-a', '10.8.0.21', [web('vm-web', 8080)]);
      expect((await beat('node-b', '10.8.0.22')).mesh_routes).toHaveLength(1);
    }
    expect(listLive).toHaveBeenCalledTimes(1);

    // The table is older than a second: a change is answered at once.
    await beat('node-a', '10.8.0.21', [web('vm-web', 8080), web('vm-shop', 8081)]);
    expect((await beat('node-b', '10.8.0.22')).mesh_routes?.map((r) => r.vm_id)).toEqual([
      'vm-web',
      'vm-shop',
    ]);
    expect(listLive).toHaveBeenCalledTimes(2);

    // A node the sweep drops leaves the table as soon (the table is older than a second).
    clock.advance(2_000);
    expect((await beat('node-b', '10.8.0.22')).mesh_routes).toHaveLength(2);
    await repository.dropStale(clock.now() - 1_000);
    expect((await beat('node-b', '10.8.0.22')).mesh_routes).toBeUndefined();
  });

  it('leaves out a node as soon as it ages out (30 s silent), swept or not', async () => {
    await beat('node-b', '10.8.0.22');
    clock.advance(5_000);
    await beat('node-a', '10.8.0.21', [web('vm-web', 8080)]);
    for (let second = 0; second < 30; second++) {
      clock.advance(1_000);
      expect((await beat('node-b', '10.8.0.22')).mesh_routes).toHaveLength(1);
    }
    clock.advance(1_000);
    expect((await beat('node-b', '10.8.0.22')).mesh_routes).toBeUndefined();
  });

  it('reads the table again after 10 s unchanged, and every second from a store that cannot tell', async () => {
    const listLive = jest.spyOn(repository, 'listLive');
    await beat('node-a', '10.8.0.21', [web('vm-web', 8080)]);
    for (let second = 0; second < 10; second++) {
      clock.advance(1_000);
      await beat('node-a', '10.8.0.21', [web('vm-web', 8080)]);
    }
    expect(listLive).toHaveBeenCalledTimes(2);

    // A store other controllers write too cannot tell.
    const shared: NodesRepository = repository;
    jest.spyOn(shared, 'routesGeneration').mockReturnValue(undefined);
    for (let second = 0; second < 3; second++) {
      clock.advance(1_000);
      await beat('node-a', '10.8.0.21', [web('vm-web', 8080)]);
    }
    expect(listLive).toHaveBeenCalledTimes(5);
  });
});
