import { Test } from '@nestjs/testing';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Clock, deriveNodeToken } from '@app/daemon';
import { FLEET_APP_OPTIONS, configureFleetApp } from '../../apps/fleet/src/bootstrap';
import { loadFleetConfig } from '../../apps/fleet/src/config/fleet-config.load';
import { FleetAppModule } from '../../apps/fleet/src/fleet-app.module';
import { FakeClock } from '../support/fake-clock';
import { heartbeat } from '../support/heartbeats';
import { sampleValue } from '../support/prometheus-text';
import { freePort } from '../support/redis-server';

/** The real fleet app with VM_FLEET_METRICS_ADDR set, set up as in production, not listening. */
async function createFleetWithMetrics(
  metricsPort: number,
  env: NodeJS.ProcessEnv = {},
): Promise<NestExpressApplication> {
  const config = loadFleetConfig({ ...env, VM_FLEET_METRICS_ADDR: `127.0.0.1:${metricsPort}` });
  const moduleRef = await Test.createTestingModule({ imports: [FleetAppModule.forConfig(config)] })
    .overrideProvider(Clock)
    .useValue(new FakeClock())
    .compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>({
    ...FLEET_APP_OPTIONS,
    logger: false,
  });
  return configureFleetApp(app);
}

/** That app, its API on a free port and its metrics on `metricsPort`. */
async function startFleetWithMetrics(
  metricsPort: number,
  env: NodeJS.ProcessEnv = {},
): Promise<{
  app: NestExpressApplication;
  api: string;
  metrics: string;
}> {
  const app = await createFleetWithMetrics(metricsPort, env);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { app, api: `http://127.0.0.1:${port}`, metrics: `http://127.0.0.1:${metricsPort}` };
}

function postHeartbeat(
  api: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${api}/v1/nodes/heartbeat`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body,
  });
}

/**
 * The status of a heartbeat POSTed with `target` on its request line as it is (fetch would
 * drop a fragment and never sends an absolute form): the router still routes it as a heartbeat.
 */
async function postHeartbeatTo(api: string, target: string, body: string): Promise<number> {
  const { hostname, port } = new URL(api);
  const sent = httpRequest({
    host: hostname,
    port,
    method: 'POST',
    path: target,
    headers: { 'Content-Type': 'application/json' },
  });
  sent.end(body);
  const [answer] = (await once(sent, 'response')) as [IncomingMessage];
  answer.resume();
  return answer.statusCode ?? 0;
}

async function scrape(metrics: string): Promise<string> {
  const response = await fetch(`${metrics}/metrics`);
  expect(response.status).toBe(200);
  return response.text();
}

describe('the controller with VM_FLEET_METRICS_ADDR', () => {
  let fleet: Awaited<ReturnType<typeof startFleetWithMetrics>>;

  beforeAll(async () => {
    fleet = await startFleetWithMetrics(await freePort());
  });

  afterAll(() => fleet.app.close());

  it('serves /metrics in the Prometheus text format on its own listener, and nothing else', async () => {
    const response = await fetch(`${fleet.metrics}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(sampleValue(await response.text(), 'ppn_fleet_nodes')).toBe(0);
    expect((await fetch(`${fleet.metrics}/v1/nodes`)).status).toBe(404);
    expect((await fetch(`${fleet.metrics}/metrics`, { method: 'POST' })).status).toBe(405);
    // The API's route table is unchanged: no /metrics there.
    expect((await fetch(`${fleet.api}/metrics`)).status).toBe(404);
  });

  it('counts heartbeats refused with a 4xx before any service saw them', async () => {
    const before = await scrape(fleet.metrics);
    const refusedBefore = sampleValue(before, 'ppn_fleet_heartbeats_total{outcome="refused"}')!;
    const joinedBefore = sampleValue(before, 'ppn_fleet_heartbeats_total{outcome="joined"}')!;

    expect(
      (await postHeartbeat(fleet.api, JSON.stringify(heartbeat({ node_id: 'm1' })))).status,
    ).toBe(200);
    const missingFields = JSON.stringify({ node_id: 'm2' });
    expect((await postHeartbeat(fleet.api, missingFields)).status).toBe(400);
    expect((await postHeartbeat(fleet.api, '{"node_id": ')).status).toBe(400);
    const tooLarge = JSON.stringify({
      ...heartbeat({ node_id: 'm3' }),
      pad: 'x'.repeat(1_100_000),
    });
    expect((await postHeartbeat(fleet.api, tooLarge)).status).toBe(413);
    // Not a heartbeat: not counted.
    expect((await fetch(`${fleet.api}/v1/nodes/nope`)).status).toBe(404);

    const after = await scrape(fleet.metrics);
    expect(sampleValue(after, 'ppn_fleet_heartbeats_total{outcome="refused"}')).toBe(
      refusedBefore + 3,
    );
    expect(sampleValue(after, 'ppn_fleet_heartbeats_total{outcome="joined"}')).toBe(
      joinedBefore + 1,
    );
    expect(sampleValue(after, 'ppn_fleet_nodes')).toBe(1);
  });

  it("exports each live node's series, read from the store at scrape time, and the build", async () => {
    const body = JSON.stringify(heartbeat({ node_id: 'g1', ram_total_mb: 8192, reserved: true }));
    expect((await postHeartbeat(fleet.api, body)).status).toBe(200);
    const text = await scrape(fleet.metrics);
    expect(sampleValue(text, 'ppn_fleet_node_ram_total_bytes{node_id="g1"}')).toBe(8192 * 2 ** 20);
    expect(sampleValue(text, 'ppn_fleet_node_ram_available_bytes{node_id="g1"}')).toBe(
      4096 * 2 ** 20,
    );
    expect(sampleValue(text, 'ppn_fleet_node_vms{node_id="g1",state="Running"}')).toBe(0);
    expect(sampleValue(text, 'ppn_fleet_node_heartbeat_age_seconds{node_id="g1"}')).toBe(0);
    expect(sampleValue(text, 'ppn_fleet_node_reserved{node_id="g1"}')).toBe(1);
    const { version } = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')) as {
      version: string;
    };
    expect(sampleValue(text, `ppn_fleet_build_info{version="${version}"}`)).toBe(1);
  });

  it("shows the VMs a node's heartbeat lists as fenced, and refuses a list that is not VM ids", async () => {
    const fenced = heartbeat({ node_id: 'f1', fenced_vm_ids: ['vm-a', 'vm-b'] });
    expect((await postHeartbeat(fleet.api, JSON.stringify(fenced))).status).toBe(200);
    expect(
      sampleValue(await scrape(fleet.metrics), 'ppn_fleet_node_fenced_vms{node_id="f1"}'),
    ).toBe(2);
    const bad = await postHeartbeat(
      fleet.api,
      JSON.stringify({ ...heartbeat({ node_id: 'f2' }), fenced_vm_ids: ['../etc'] }),
    );
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toContain('fenced_vm_ids');
  });

  it('refuses to start when the address is taken, naming the variable', async () => {
    const port = Number(new URL(fleet.metrics).port);
    const second = await createFleetWithMetrics(port);
    try {
      await expect(second.listen(0, '127.0.0.1')).rejects.toThrow(
        new RegExp(`^VM_FLEET_METRICS_ADDR 127\\.0\\.0\\.1:${port} cannot be bound: .*EADDRINUSE`),
      );
    } finally {
      await second.close();
    }
  });

  it('closes the listener with the app', async () => {
    const other = await startFleetWithMetrics(await freePort());
    await scrape(other.metrics);
    await other.app.close();
    await expect(fetch(`${other.metrics}/metrics`)).rejects.toThrow();
  });
});

describe('the controller with VM_FLEET_METRICS_ADDR and a node token', () => {
  const NODE_TOKEN = 'node-token-0123456789abcdef';
  let fleet: Awaited<ReturnType<typeof startFleetWithMetrics>>;

  beforeAll(async () => {
    fleet = await startFleetWithMetrics(await freePort(), { VM_FLEET_NODE_TOKEN: NODE_TOKEN });
  });

  afterAll(() => fleet.app.close());

  it('counts heartbeats without the token (401) or not sent as JSON (415) as refused, however the path is written', async () => {
    const body = JSON.stringify(heartbeat({ node_id: 't1' }));
    expect((await postHeartbeat(fleet.api, body)).status).toBe(401);
    const wrong = { Authorization: 'Bearer another-token-0123456789' };
    expect((await postHeartbeat(fleet.api, body, wrong)).status).toBe(401);
    const form = { 'Content-Type': 'text/plain', Authorization: `Bearer ${NODE_TOKEN}` };
    expect((await postHeartbeat(fleet.api, body, form)).status).toBe(415);
    // However its request line writes the path, a heartbeat refused is counted.
    expect(await postHeartbeatTo(fleet.api, '/v1/nodes/heartbeat#t1', body)).toBe(401);
    expect(await postHeartbeatTo(fleet.api, `${fleet.api}/v1/nodes/heartbeat`, body)).toBe(401);
    const right = { Authorization: `Bearer ${NODE_TOKEN}` };
    expect((await postHeartbeat(fleet.api, body, right)).status).toBe(200);

    const text = await scrape(fleet.metrics);
    expect(sampleValue(text, 'ppn_fleet_heartbeats_total{outcome="refused"}')).toBe(5);
    expect(sampleValue(text, 'ppn_fleet_heartbeats_total{outcome="joined"}')).toBe(1);
    expect(sampleValue(text, 'ppn_fleet_nodes')).toBe(1);
  });
});

describe('the controller with VM_FLEET_METRICS_ADDR during a move to per-node tokens', () => {
  const SECRET = 'fleet-node-secret-3a5c7e9b1d0f2468ace02468';
  const SHARED = 'shared-node-token-7b9d1f3a5c0e2468';
  let fleet: Awaited<ReturnType<typeof startFleetWithMetrics>>;

  beforeAll(async () => {
    fleet = await startFleetWithMetrics(await freePort(), {
      VM_FLEET_NODE_SECRET: SECRET,
      VM_FLEET_NODE_TOKEN: SHARED,
    });
  });

  afterAll(() => fleet.app.close());

  it("counts the live nodes by credential, and a heartbeat with another node's token as refused", async () => {
    const beat = (nodeId: string, token: string) =>
      postHeartbeat(fleet.api, JSON.stringify(heartbeat({ node_id: nodeId })), {
        Authorization: `Bearer ${token}`,
      });
    expect((await beat('m1', deriveNodeToken(SECRET, 'm1'))).status).toBe(200);
    expect((await beat('m2', SHARED)).status).toBe(200);
    expect((await beat('m3', SHARED)).status).toBe(200);
    expect((await beat('m3', deriveNodeToken(SECRET, 'm1'))).status).toBe(401);

    const text = await scrape(fleet.metrics);
    const byCredential = (credential: string) =>
      sampleValue(text, `ppn_fleet_nodes_by_credential{credential="${credential}"}`);
    expect(byCredential('own')).toBe(1);
    expect(byCredential('shared')).toBe(2);
    expect(byCredential('previous_secret')).toBe(0);
    expect(sampleValue(text, 'ppn_fleet_heartbeats_total{outcome="refused"}')).toBe(1);
  });
});
