import request from 'supertest';
import type { SpawnVmRequest } from '@app/fleet-domain';
import { NodesRepository } from '../../apps/fleet/src/nodes/nodes.repository';
import { RedisConnection } from '../../apps/fleet/src/nodes/redis/redis-connection';
import { RedisClock } from '../../apps/fleet/src/nodes/redis/redis.clock';
import { eventually } from '../support/daemons';
import { FakeClock } from '../support/fake-clock';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { RedisServer, freePort } from '../support/redis-server';
import { StubAgent, json } from '../support/stub-agent';

jest.setTimeout(20_000);

/** Controllers sharing one real redis-server (VM_FLEET_REDIS_URL), each a real app over HTTP. */
describe('fleet state shared in Redis', () => {
  let redis: RedisServer;
  const open: RunningFleet[] = [];
  /** One clock for every controller of a test, as hosts agreeing on the time. */
  let clock: FakeClock;

  async function controller(url = redis.url): Promise<RunningFleet> {
    const fleet = await startFleet({ redisUrl: url, clock, agentTimeoutMs: 2_000 });
    open.push(fleet);
    return fleet;
  }

  async function close(fleet: RunningFleet): Promise<void> {
    open.splice(open.indexOf(fleet), 1);
    await fleet.close();
  }

  async function ready(fleet: RunningFleet): Promise<void> {
    await eventually(
      'the controller reaching Redis',
      async () => {
        const response = await request(fleet.url).get('/v1/fleet');
        return response.status === 200 ? true : undefined;
      },
      10_000,
    );
  }

  async function twoControllers(): Promise<[RunningFleet, RunningFleet]> {
    const a = await controller();
    const b = await controller();
    await ready(a);
    await ready(b);
    return [a, b];
  }

  beforeEach(async () => {
    clock = new FakeClock();
    redis = await RedisServer.start();
  });

  afterEach(async () => {
    await Promise.all(open.splice(0).map((fleet) => fleet.close()));
    await redis.stop();
  });

  it('lets two controllers see each other’s heartbeats, VMs and tenants', async () => {
    const [a, b] = await twoControllers();
    await request(a.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: 'via-a', vms: [vmRecord('vm-1', { tenant_id: 'acme' })] }))
      .expect(200);
    await request(b.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: 'via-b' }))
      .expect(200);
    for (const fleet of [a, b]) {
      const { body } = await request(fleet.url).get('/v1/nodes').expect(200);
      expect(body.map((node: { node_id: string }) => node.node_id)).toEqual(['via-a', 'via-b']);
      const acme = await request(fleet.url).get('/v1/vms?tenant_id=acme').expect(200);
      expect(acme.body).toEqual([{ ...vmRecord('vm-1', { tenant_id: 'acme' }), node_id: 'via-a' }]);
    }
    const fromA = await request(a.url).get('/v1/nodes/via-b').expect(200);
    const fromB = await request(b.url).get('/v1/nodes/via-b').expect(200);
    expect(fromA.body).toEqual(fromB.body);
  });

  it('loses nothing when a controller restarts', async () => {
    let a = await controller();
    await ready(a);
    for (const node_id of ['n1', 'n2', 'n3']) {
      await request(a.url).post('/v1/nodes/heartbeat').send(heartbeat({ node_id })).expect(200);
    }
    const before = (await request(a.url).get('/v1/nodes').expect(200)).body;
    await close(a);
    a = await controller();
    await ready(a);
    expect((await request(a.url).get('/v1/nodes').expect(200)).body).toEqual(before);
  });

  it('drops a silent node for every controller at once', async () => {
    const [a, b] = await twoControllers();
    await request(a.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: 'quiet' }))
      .expect(200);
    clock.advance(30_100);
    await request(a.url).get('/v1/nodes/quiet').expect(404);
    await request(b.url).get('/v1/nodes/quiet').expect(404);
  });

  it('never over-commits a node when both controllers place at once', async () => {
    const [a, b] = await twoControllers();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let spawned = 0;
    const agent = await new StubAgent(async (call, res) => {
      await gate;
      const body = call.body as SpawnVmRequest;
      spawned += 1;
      // Under the vm_id the controller minted, as an agent of ours makes it.
      json(
        res,
        201,
        vmRecord(body.vm_id ?? `vm-${spawned}`, {
          ram_alloc_mb: body.ram_mb,
          state: 'Provisioning' as never,
        }),
      );
    }).start();
    try {
      // 4096 MB free: three 1024 MB VMs fit (each needs 1536 free when placed), a fourth does not.
      await request(a.url)
        .post('/v1/nodes/heartbeat')
        .send(
          heartbeat({
            node_id: 'n1',
            spawn_port: agent.port,
            ram_total_mb: 8192,
            ram_used_mb: 4096,
          }),
        )
        .expect(200);
      const statuses: number[] = [];
      let threeRefused!: () => void;
      const refusals = new Promise<void>((resolve) => (threeRefused = resolve));
      const creates = Array.from({ length: 6 }, (_, index) =>
        request((index % 2 ? a : b).url)
          .post('/v1/vms')
          .send({ vm_type: 'web', ram_mb: 1024, vcpu_count: 1 })
          .then((response) => {
            statuses.push(response.status);
            if (statuses.length === 3) threeRefused();
            return response.status;
          }),
      );
      await refusals;
      expect(statuses).toEqual([503, 503, 503]);
      release();
      expect((await Promise.all(creates)).sort()).toEqual([201, 201, 201, 503, 503, 503]);
      expect(agent.calls).toHaveLength(3);
      const node = await request(b.url).get('/v1/nodes/n1').expect(200);
      expect(node.body).toMatchObject({ vm_count: 3, ram_available_mb: 1024 });
    } finally {
      release();
      await agent.stop();
    }
  });

  it('claims a new VM id for one node when two nodes list it through two controllers at the same instant, round after round', async () => {
    const [a, b] = await twoControllers();
    const repository = a.app.get(NodesRepository);
    const rounds = 150;
    for (let round = 0; round < rounds; round++) {
      const vmId = `vm-race-${round}`;
      // Both nodes live and beating, then both list the new id at once, each to its controller.
      const [fromA, fromB] = await Promise.all([
        request(a.url)
          .post('/v1/nodes/heartbeat')
          .send(heartbeat({ node_id: 'node-x', vms: [vmRecord(vmId)] })),
        request(b.url)
          .post('/v1/nodes/heartbeat')
          .send(heartbeat({ node_id: 'node-y', vms: [vmRecord(vmId)] })),
      ]);
      expect([fromA.status, fromB.status]).toEqual([200, 200]);
      const holders = (await repository.listAll()).filter((node) =>
        node.vms.some((vm) => vm.vm_id === vmId),
      );
      expect(holders).toHaveLength(1);
    }
    // Listed once, on one node, by either controller.
    for (const fleet of [a, b]) {
      const { body } = await request(fleet.url).get('/v1/vms').expect(200);
      expect(body.map((vm: { vm_id: string }) => vm.vm_id)).toEqual([`vm-race-${rounds - 1}`]);
    }
  });

  it('answers 503 naming Redis while it is down, and recovers by itself when it is back', async () => {
    const a = await controller();
    await ready(a);
    await request(a.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: 'n1' }))
      .expect(200);

    await redis.stop();
    const down = await eventually(
      'a 503',
      async () => {
        const response = await request(a.url).get('/v1/nodes');
        return response.status === 503 ? response : undefined;
      },
      5_000,
    );
    expect(down.body.message).toMatch(/Redis at redis:\/\/127\.0\.0\.1:\d+.* unavailable/);
    await request(a.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: 'n2' }))
      .expect(503);
    await request(a.url).get('/v1/fleet').expect(503);
    await request(a.url).get('/v1/vms').expect(503);
    // Input that is bad is still a 400, whatever the store does.
    await request(a.url).post('/v1/nodes/heartbeat').send({ node_id: '' }).expect(400);

    await redis.start();
    await ready(a);
    // This Redis keeps nothing on disk: the fleet is back as the agents beat again.
    await request(a.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: 'n2' }))
      .expect(200);
    await request(a.url).get('/v1/nodes/n2').expect(200);
  });

  it('starts while Redis is unreachable, answers 503, and serves once Redis comes up', async () => {
    const port = await freePort();
    const a = await controller(`redis://127.0.0.1:${port}`);
    const { body } = await request(a.url).get('/v1/fleet').expect(503);
    expect(body.message).toContain(`127.0.0.1:${port}`);
    const late = await RedisServer.start(port);
    try {
      await ready(a);
      await request(a.url)
        .post('/v1/nodes/heartbeat')
        .send(heartbeat({ node_id: 'n1' }))
        .expect(200);
    } finally {
      await close(a);
      await late.stop();
    }
  });
});

describe('RedisClock', () => {
  let redis: RedisServer;

  beforeAll(async () => {
    redis = await RedisServer.start();
  });

  afterAll(async () => {
    await redis.stop();
  });

  it('follows Redis TIME, not the local clock, so controllers with wrong clocks agree', async () => {
    const connection = new RedisConnection(redis.url, redis.url);
    const clock = new RedisClock(connection);
    await new Promise((resolve) => connection.client.once('ready', resolve));
    const realNow = Date.now.bind(Date);
    const skew = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 10 * 60_000);
    try {
      await clock.sync();
      const [seconds, micros] = await connection.client.time();
      const redisNow = Number(seconds) * 1000 + Number(micros) / 1000;
      expect(Math.abs(clock.now() - redisNow)).toBeLessThan(100);
    } finally {
      skew.mockRestore();
      clock.onApplicationShutdown();
      await connection.onApplicationShutdown();
    }
  });
});
