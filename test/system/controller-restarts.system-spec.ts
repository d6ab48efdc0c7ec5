import type { ServerResponse } from 'node:http';
import Redis from 'ioredis';
import request from 'supertest';
import {
  Daemon,
  FLEET_URL,
  eventually,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { FakeClock } from '../support/fake-clock';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat } from '../support/heartbeats';
import { RedisServer } from '../support/redis-server';
import { StubAgent, StubAgentCall, json, spawnKeyOf, spawnedVm } from '../support/stub-agent';

jest.setTimeout(40_000);

/** The controller's dispatch timeout plus the hold margin: how long a hold can outlive its controller. */
const HOLD_LIFETIME_MS = 15_000;

/** POSTs to the real controller on :9203; the answer, or the error when it died meanwhile. */
function postVm(body: object, key?: string): Promise<Response | Error> {
  return fetch(`${FLEET_URL}/v1/vms`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'Idempotency-Key': key } : {}) },
    body: JSON.stringify(body),
  }).catch((error: Error) => error);
}

async function beatTo(url: string, body: object): Promise<void> {
  const response = await fetch(`${url}/v1/nodes/heartbeat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status !== 200) throw new Error(`heartbeat answered ${response.status}`);
}

async function startController(env: NodeJS.ProcessEnv = {}): Promise<Daemon> {
  const daemon = startFleetDaemon(env);
  await daemon.waitForOutput(/listening on 0\.0\.0\.0:9203/);
  if (env.VM_FLEET_REDIS_URL) await daemon.waitForOutput(/Redis at .* connected/);
  return daemon;
}

const big = { vm_type: 'web', ram_mb: 4096, vcpu_count: 2 };

/**
 * A controller killed in the middle of a dispatch, as a real process (SIGKILL), and what the
 * fleet makes of it afterwards, read through a second controller on the same real Redis.
 */
describe('a controller killed mid-dispatch (Redis)', () => {
  let redis: RedisServer;
  let inspector: Redis;
  let stub: StubAgent;
  let survivor: RunningFleet | undefined;
  /** Until a test says otherwise the agent never answers: the controller dies waiting. */
  let answer: ((call: StubAgentCall, res: ServerResponse) => void) | undefined;
  /** The Idempotency-Key of every spawn the agent received. */
  let spawnKeys: Array<string | undefined>;
  let reached: Promise<void>;

  beforeEach(async () => {
    redis = await RedisServer.start();
    inspector = new Redis(redis.url);
    answer = undefined;
    spawnKeys = [];
    let agentReached!: () => void;
    reached = new Promise((resolve) => (agentReached = resolve));
    stub = await new StubAgent((call, res) => {
      spawnKeys.push(spawnKeyOf(res));
      agentReached();
      answer?.(call, res);
    }).start();
  });

  afterEach(async () => {
    await stopAllDaemons();
    await survivor?.close();
    survivor = undefined;
    await stub.stop();
    // quit, not disconnect: disconnect leaves a 2 s timer that keeps jest from exiting.
    await inspector.quit();
    await redis.stop();
  });

  /** Controller A takes a create and is killed -9 while the agent has not answered. */
  async function killedMidDispatch(key?: string): Promise<void> {
    const doomed = await startController({ VM_FLEET_REDIS_URL: redis.url });
    await beatTo(
      FLEET_URL,
      heartbeat({ node_id: 'n1', spawn_port: stub.port, ram_total_mb: 8192, ram_used_mb: 0 }),
    );
    const pending = postVm(big, key);
    await reached;
    doomed.process.kill('SIGKILL');
    expect((await doomed.waitForExit()).signal).toBe('SIGKILL');
    // The client got no answer at all.
    expect(await pending).toMatchObject({ message: 'fetch failed' });
  }

  /** Controller B: the real app in process, on the same Redis, with a clock the test moves. */
  async function secondController(): Promise<RunningFleet> {
    survivor = await startFleet({
      redisUrl: redis.url,
      clock: new FakeClock(Date.now()),
      agentTimeoutMs: 2_000,
    });
    const fleet = survivor;
    await eventually(
      'controller B reaching Redis',
      async () => ((await request(fleet.url).get('/v1/fleet')).status === 200 ? true : undefined),
      10_000,
    );
    return fleet;
  }

  it('leaves a RAM hold that is gone after its deadline', async () => {
    await killedMidDispatch();
    const b = await secondController();
    const ramOf = async () =>
      (await request(b.url).get('/v1/nodes/n1').expect(200)).body.ram_available_mb as number;

    // The dead controller's hold still counts: 4096 of 8192 MB.
    expect(await ramOf()).toBe(4096);
    const refused = await request(b.url).post('/v1/vms').send(big).expect(503);
    expect(refused.body.message).toContain('n1: needs 4608 MB, has 4096 MB');
    expect(await inspector.zcard('ppn-fleet:hold-deadlines')).toBe(1);

    b.clock.advance(HOLD_LIFETIME_MS);
    await eventually(
      'the hold to be ended by the sweep',
      async () => ((await ramOf()) === 8192 ? true : undefined),
      5_000,
    );
    expect(await inspector.zcard('ppn-fleet:hold-deadlines')).toBe(0);

    answer = (call, res) => json(res, 201, spawnedVm(call));
    await request(b.url).post('/v1/vms').send(big).expect(201);
  });

  it('lets the client retry with its Idempotency-Key on another controller: the same node is asked with the same key, one VM', async () => {
    await killedMidDispatch('order-7');
    const b = await secondController();
    // The node's agent answers the retry with the VM the first dispatch made.
    answer = (call, res) => json(res, 201, spawnedVm(call));
    const retry = await request(b.url)
      .post('/v1/vms')
      .set('Idempotency-Key', 'order-7')
      .send(big)
      .expect(200);
    // The same vm_id too: the one the first controller minted, kept with its RAM hold.
    const minted = (stub.calls[0].body as { vm_id: string }).vm_id;
    expect((stub.calls[1].body as { vm_id: string }).vm_id).toBe(minted);
    expect(retry.body.vm_id).toBe(minted);
    expect(stub.calls).toHaveLength(2);
    expect(spawnKeys[1]).toMatch(/^[0-9a-f]{64}\.[0-9a-f]{64}$/);
    expect(spawnKeys[1]).toBe(spawnKeys[0]);
    // Asked again, it is known: no third dispatch.
    await request(b.url).post('/v1/vms').set('Idempotency-Key', 'order-7').send(big).expect(200);
    expect(stub.calls).toHaveLength(2);
    const { body: vms } = await request(b.url).get('/v1/vms').expect(200);
    expect(vms.map((vm: { vm_id: string }) => vm.vm_id)).toEqual([minted]);
  });

  it('answers the VM when Redis drops between the agent accepting it and the record; the next heartbeat records it', async () => {
    const b = await secondController();
    await request(b.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: 'n1', spawn_port: stub.port, ram_total_mb: 8192, ram_used_mb: 0 }))
      .expect(200);
    answer = (call, res) => {
      void redis.stop().then(() => json(res, 201, spawnedVm(call)));
    };
    const { body } = await request(b.url).post('/v1/vms').send(big).expect(201);
    expect(body.vm_id).toBe((stub.calls[0].body as { vm_id: string }).vm_id);

    await redis.start();
    await eventually(
      'controller B reaching Redis again',
      async () => ((await request(b.url).get('/v1/fleet')).status === 200 ? true : undefined),
      10_000,
    );
    // This Redis keeps nothing on disk: the node's next heartbeat brings node and VM back.
    await request(b.url)
      .post('/v1/nodes/heartbeat')
      .send(
        heartbeat({
          node_id: 'n1',
          spawn_port: stub.port,
          ram_total_mb: 8192,
          ram_used_mb: 4096,
          // As the agent reports it: node_id is the controller's to add.
          vms: [{ ...body, node_id: undefined, idempotency_key: spawnKeys[0] }],
        }),
      )
      .expect(200);
    await request(b.url).get('/v1/vms').expect(200, [body]);
  });
});

describe('a restarted controller process (in memory)', () => {
  let stub: StubAgent;

  afterEach(async () => {
    await stopAllDaemons();
    await stub.stop();
  });

  it('takes no VM for a key from an agent after the restart (the record is gone): the retry is refused, no second VM', async () => {
    let spawnKey: string | undefined;
    let made: ReturnType<typeof spawnedVm> | undefined;
    // As an agent of ours answers: the VM its key made (200), else a new one.
    stub = await new StubAgent((call, res) => {
      if (made && spawnKeyOf(res) === spawnKey) return json(res, 200, made);
      spawnKey = spawnKeyOf(res);
      made = spawnedVm(call);
      json(res, 201, made);
    }).start();
    let controller = await startController();
    await beatTo(FLEET_URL, heartbeat({ node_id: 'n1', spawn_port: stub.port }));
    const first = await postVm(big, 'order-9');
    if (first instanceof Error) throw first;
    expect(first.status).toBe(201);
    const vm = (await first.json()) as { vm_id: string };

    expect((await controller.stop()).code).toBe(0);
    controller = await startController();
    await beatTo(
      FLEET_URL,
      heartbeat({
        node_id: 'n1',
        spawn_port: stub.port,
        vms: [{ ...vm, idempotency_key: spawnKey } as never],
      }),
    );
    // The restarted controller has no record of the key, and what a node answers or lists for
    // it is none: the agent's VM is refused (the only node: 502), and no other VM is made.
    const retry = await postVm(big, 'order-9');
    if (retry instanceof Error) throw retry;
    expect(retry.status).toBe(502);
    expect(stub.calls).toHaveLength(2);
    expect(controller.output).toContain(
      `answered 200 with vm ${vm.vm_id}, not the vm ${(stub.calls[1].body as { vm_id: string }).vm_id} it was asked to make`,
    );
    expect(controller.output).not.toContain('order-9');
    const listed = (await (await fetch(`${FLEET_URL}/v1/vms`)).json()) as Array<{ vm_id: string }>;
    expect(listed.map((one) => one.vm_id)).toEqual([vm.vm_id]);
  });
});
