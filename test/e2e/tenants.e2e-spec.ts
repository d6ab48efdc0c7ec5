import request from 'supertest';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deriveTenantToken } from '@app/daemon';
import type { SpawnVmRequest } from '@app/fleet-domain';
import { FleetConfigError } from '../../apps/fleet/src/config/fleet.config';
import { loadFleetConfig } from '../../apps/fleet/src/config/fleet-config.load';
import { FakeClock } from '../support/fake-clock';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { scratchFolder } from '../support/scratch-folders';
import { StubAgent, json, spawnedVm } from '../support/stub-agent';

/**
 * Two tenants, acme and globex, with their own tokens, against the real controller (the API on
 * :9203's routes and the operations listener) and a stub agent: each sees and acts on its own
 * VMs only, acme's quota refuses what would go beyond it (429, nothing made), and what acme
 * uses is counted from the fleet's own state: after heartbeats and after a controller restart.
 */
const API_TOKEN = 'api-token-5d0e1b7c3a9f2846';
const NODE_TOKEN = 'node-token-91c4e7a02b6d3f58';
const TENANT_SECRET = 'tenant-secret-0f3b8d6e2a4c71958e0d3b6a2f4c7e91';
const ACME = deriveTenantToken(TENANT_SECRET, 'acme');
const GLOBEX = deriveTenantToken(TENANT_SECRET, 'globex');
const HOOLI = deriveTenantToken(TENANT_SECRET, 'hooli');

const ACME_VM = 'vm-acme000000000001';
const GLOBEX_VM = 'vm-globex0000000001';
const NOBODYS_VM = 'vm-nobody0000000001';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

describe('tenants: tokens, scoping, quotas and the audit log', () => {
  let folder: string;
  let env: Record<string, string>;
  let fleet: RunningFleet;
  let agent: StubAgent;
  /** The VMs the node's agent lists in its heartbeats: those it was spawned with, tenants and all. */
  let listed: ReturnType<typeof vmRecord>[];

  beforeAll(() => {
    folder = scratchFolder('ppn-tenants-');
    const quotas = join(folder, 'quotas.json');
    writeFileSync(
      quotas,
      JSON.stringify({
        acme: { vms: 2, ram_mb: 3072, vcpus: 4 },
        globex: {},
        hooli: { disk_gb: 30 },
      }),
    );
    env = {
      VM_FLEET_API_TOKEN: API_TOKEN,
      VM_FLEET_NODE_TOKEN: NODE_TOKEN,
      VM_FLEET_TENANT_SECRET: TENANT_SECRET,
      VM_FLEET_TENANT_QUOTAS_FILE: quotas,
      VM_FLEET_AUDIT_LOG: join(folder, 'audit.log'),
    };
  });

  beforeEach(async () => {
    listed = [
      vmRecord(ACME_VM, { tenant_id: 'acme', ram_alloc_mb: 1024 }),
      vmRecord(GLOBEX_VM, { tenant_id: 'globex' }),
      vmRecord(NOBODYS_VM),
    ];
    agent = await new StubAgent((call, res) => {
      if (call.url === '/v1/spawn') {
        const vm = spawnedVm(call);
        listed.push(vm);
        json(res, 201, vm);
      } else {
        json(res, 500, { statusCode: 500, error: 'Internal Server Error', message: 'unexpected' });
      }
    }).start();
    fleet = await startFleet({ env, ops: true, clock: new FakeClock(Date.now()) });
    await beat();
  });

  afterEach(async () => {
    await fleet.close();
    await agent.stop();
  });

  function beat(node_id = 'n1') {
    return request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .set(bearer(NODE_TOKEN))
      .send(heartbeat({ node_id, spawn_port: agent.port, ram_total_mb: 65536, vms: listed }))
      .expect(200);
  }

  const small = { vm_type: 'web', ram_mb: 1024, vcpu_count: 1 };
  const ids = (vms: Array<{ vm_id: string }>) => vms.map(({ vm_id }) => vm_id).sort();
  const spawns = () => agent.calls.filter(({ url }) => url === '/v1/spawn');

  it("lists a tenant's own VMs only, on both listeners, and refuses a filter naming another tenant", async () => {
    for (const base of [fleet.url, fleet.opsUrl]) {
      const own = await request(base).get('/v1/vms').set(bearer(ACME)).expect(200);
      expect(ids(own.body)).toEqual([ACME_VM]);
      const filtered = await request(base).get('/v1/vms?tenant_id=acme').set(bearer(ACME));
      expect(ids(filtered.body)).toEqual([ACME_VM]);
      const other = await request(base)
        .get('/v1/vms?tenant_id=globex')
        .set(bearer(ACME))
        .expect(403);
      expect(other.body.message).toContain('tenant_id names another tenant');
      const globex = await request(base).get('/v1/vms').set(bearer(GLOBEX)).expect(200);
      expect(ids(globex.body)).toEqual([GLOBEX_VM]);
      // The operator still sees every VM.
      const all = await request(base).get('/v1/vms').set(bearer(API_TOKEN)).expect(200);
      expect(ids(all.body)).toEqual([ACME_VM, GLOBEX_VM, NOBODYS_VM].sort());
    }
  });

  it("answers 404 to every route on another tenant's VM, as for one that does not exist, and asks no agent", async () => {
    const refusals: Array<[string, string, string, object?]> = [];
    for (const vm of [GLOBEX_VM, NOBODYS_VM, 'vm-notanywhere00001']) {
      refusals.push(
        [fleet.url, 'delete', `/v1/vms/${vm}`],
        [fleet.url, 'delete', `/v1/vms/${vm}?forget=true`],
        [fleet.opsUrl, 'get', `/v1/vms/${vm}`],
        [fleet.opsUrl, 'post', `/v1/vms/${vm}/stop`, {}],
        [fleet.opsUrl, 'post', `/v1/vms/${vm}/start`, {}],
        [fleet.opsUrl, 'post', `/v1/vms/${vm}/restart`, {}],
        [fleet.opsUrl, 'get', `/v1/vms/${vm}/console`],
        [fleet.opsUrl, 'post', `/v1/vms/${vm}/backups`, {}],
        [fleet.opsUrl, 'get', `/v1/vms/${vm}/backups`],
      );
    }
    for (const [base, method, path, body] of refusals) {
      const sent = request(base)[method as 'get'](path).set(bearer(ACME));
      const response = await (body === undefined ? sent : sent.send(body));
      expect({ path, method, status: response.status }).toEqual({ path, method, status: 404 });
      const vmId = /\/v1\/vms\/([^/?]+)/.exec(path)![1];
      expect(response.body.message).toBe(`vm ${vmId} is not listed on any live node`);
    }
    expect(agent.calls).toEqual([]);
    // The operator's view is unchanged: nothing was deleted.
    const all = await request(fleet.url).get('/v1/vms').set(bearer(API_TOKEN)).expect(200);
    expect(all.body).toHaveLength(3);
  });

  it("refuses a tenant forgetting its own VM (the operator's alone), with 403 naming the API token", async () => {
    const refused = await request(fleet.url)
      .delete(`/v1/vms/${ACME_VM}?forget=true`)
      .set(bearer(ACME))
      .expect(403);
    expect(refused.body.message).toContain('needs the API token (VM_FLEET_API_TOKEN)');
    expect(agent.calls).toEqual([]);
    const all = await request(fleet.url).get('/v1/vms').set(bearer(API_TOKEN)).expect(200);
    expect(all.body).toHaveLength(3);
  });

  it('lets a tenant delete its own VM', async () => {
    agent.answerWith((call, res) => {
      listed = listed.filter(({ vm_id }) => !call.url.endsWith(vm_id));
      res.writeHead(204).end();
    });
    await request(fleet.url).delete(`/v1/vms/${ACME_VM}`).set(bearer(ACME)).expect(204);
    expect(agent.calls.map(({ method, url }) => `${method} ${url}`)).toEqual([
      `DELETE /v1/vms/${ACME_VM}`,
    ]);
  });

  it("creates in the token's tenant, refuses a body naming another, and refuses the fleet and node routes", async () => {
    const made = await request(fleet.url).post('/v1/vms').set(bearer(ACME)).send(small).expect(201);
    expect(made.body.tenant_id).toBe('acme');
    expect((spawns()[0].body as SpawnVmRequest).tenant_id).toBe('acme');

    const other = await request(fleet.url)
      .post('/v1/vms')
      .set(bearer(ACME))
      .send({ ...small, tenant_id: 'globex' })
      .expect(403);
    expect(other.body.message).toContain("tenant acme's token opens its own VMs only");
    expect(spawns()).toHaveLength(1);

    for (const path of ['/v1/fleet', '/v1/nodes', '/v1/nodes/n1']) {
      const refused = await request(fleet.url).get(path).set(bearer(ACME)).expect(403);
      expect(refused.body.message).toContain('this route needs the API token (VM_FLEET_API_TOKEN)');
    }
    await request(fleet.opsUrl).get('/v1/node-disks').set(bearer(ACME)).expect(403);
    // Never a heartbeat: a tenant's token is not a node's.
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .set(bearer(ACME))
      .send(heartbeat({ node_id: 'n2' }))
      .expect(401);
    // A token derived for a tenant the quotas file does not name opens nothing.
    await request(fleet.url)
      .get('/v1/vms')
      .set(bearer(deriveTenantToken(TENANT_SECRET, 'initech')))
      .expect(401);
  });

  it('refuses a create beyond the quota with 429 naming the quota, its use and its limit, and makes nothing', async () => {
    // acme: 1 VM of 1024 MB listed; the quota is 2 VMs, 3072 MB, 4 vCPUs.
    const tooBig = await request(fleet.url)
      .post('/v1/vms')
      .set(bearer(ACME))
      .send({ ...small, ram_mb: 2560 })
      .expect(429);
    expect(tooBig.body.message).toBe(
      'tenant acme would go beyond its quota, nothing was made: ram_mb: 1024 MB in use + 2560 requested > limit 3072 MB',
    );
    await request(fleet.url).post('/v1/vms').set(bearer(ACME)).send(small).expect(201);
    // The operator creating for acme is held to acme's quota too.
    const third = await request(fleet.url)
      .post('/v1/vms')
      .set(bearer(API_TOKEN))
      .send({ ...small, tenant_id: 'acme' })
      .expect(429);
    expect(third.body.message).toContain('vms: 2 VMs in use + 1 requested > limit 2 VMs');
    expect(spawns()).toHaveLength(1);
    // globex has no limits.
    await request(fleet.url).post('/v1/vms').set(bearer(GLOBEX)).send(small).expect(201);
    await request(fleet.url).post('/v1/vms').set(bearer(GLOBEX)).send(small).expect(201);
  });

  it("counts a VM's disk once more for each copy, the controller's default copies included", async () => {
    // hooli: 30 GiB. A 10 GiB VM with the default copy (VM_FLEET_COPIES, 1) takes 20 GiB.
    const disk = { ...small, disk_gb: 10 };
    await request(fleet.url).post('/v1/vms').set(bearer(HOOLI)).send(disk).expect(201);
    const over = await request(fleet.url).post('/v1/vms').set(bearer(HOOLI)).send(disk);
    expect(over.status).toBe(429);
    expect(over.body.message).toContain('disk_gb: 20 GiB in use + 20 requested > limit 30 GiB');
    // Without copies it fits.
    await request(fleet.url)
      .post('/v1/vms')
      .set(bearer(HOOLI))
      .send({ ...disk, copies: { count: 0, every_s: 60 } })
      .expect(201);
  });

  it("keeps counting a tenant's VMs after heartbeats and after a controller restart", async () => {
    await request(fleet.url).post('/v1/vms').set(bearer(ACME)).send(small).expect(201);
    // The agent lists both of acme's VMs (with their tenant) in every heartbeat from now on.
    for (let beats = 0; beats < 3; beats++) await beat();
    const afterBeats = await request(fleet.url).post('/v1/vms').set(bearer(ACME)).send(small);
    expect(afterBeats.status).toBe(429);
    expect(afterBeats.body.message).toContain('vms: 2 VMs in use');

    // A new controller (memory: it knows nothing until the node heartbeats again).
    await fleet.close();
    fleet = await startFleet({ env, ops: true, clock: new FakeClock(Date.now()) });
    await beat();
    const afterRestart = await request(fleet.url).post('/v1/vms').set(bearer(ACME)).send(small);
    expect(afterRestart.status).toBe(429);
    expect(afterRestart.body.message).toContain('vms: 2 VMs in use');
    expect(spawns()).toHaveLength(1);
  });

  it('writes one audit line per state-changing request, naming who, what, which VM and the outcome, and never a token', async () => {
    const log = env.VM_FLEET_AUDIT_LOG;
    const before = readFileSync(log, 'utf8').length;
    const made = await request(fleet.url).post('/v1/vms').set(bearer(ACME)).send(small).expect(201);
    await beat(); // a heartbeat changes the node's state, but is not audited
    await request(fleet.url).delete(`/v1/vms/${GLOBEX_VM}`).set(bearer(ACME)).expect(404);
    await request(fleet.opsUrl)
      .post(`/v1/vms/${GLOBEX_VM}/stop`)
      .set(bearer(API_TOKEN))
      .send({})
      .expect(502);
    await request(fleet.url).get('/v1/vms').set(bearer(ACME)).expect(200);
    await request(fleet.url)
      .delete(`/v1/vms/${ACME_VM}`)
      .set(bearer('wrong-token-000000000'))
      .expect(401);
    const text = readFileSync(log, 'utf8');
    const lines = text
      .slice(before)
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map(({ time: _time, from: _from, ...line }) => line)).toEqual([
      {
        who: 'tenant',
        tenant_id: 'acme',
        listener: 'api',
        method: 'POST',
        path: '/v1/vms',
        vm_id: made.body.vm_id,
        status: 201,
      },
      {
        who: 'tenant',
        tenant_id: 'acme',
        listener: 'api',
        method: 'DELETE',
        path: `/v1/vms/${GLOBEX_VM}`,
        vm_id: GLOBEX_VM,
        status: 404,
      },
      {
        who: 'operator',
        listener: 'ops',
        method: 'POST',
        path: `/v1/vms/${GLOBEX_VM}/stop`,
        vm_id: GLOBEX_VM,
        status: 502,
      },
      {
        who: 'none',
        listener: 'api',
        method: 'DELETE',
        path: `/v1/vms/${ACME_VM}`,
        vm_id: ACME_VM,
        status: 401,
      },
    ]);
    for (const secret of [API_TOKEN, NODE_TOKEN, TENANT_SECRET, ACME, GLOBEX]) {
      expect(text).not.toContain(secret);
    }
    expect(statSync(log).mode & 0o777).toBe(0o600);
  });
});

describe('tenants in the web console', () => {
  let fleet: RunningFleet;
  let agent: StubAgent;
  let env: Record<string, string>;

  beforeAll(() => {
    const folder = scratchFolder('ppn-tenants-console-');
    const quotas = join(folder, 'quotas.json');
    writeFileSync(quotas, JSON.stringify({ acme: { vms: 2 }, globex: {} }));
    env = {
      VM_FLEET_API_TOKEN: API_TOKEN,
      VM_FLEET_TENANT_SECRET: TENANT_SECRET,
      VM_FLEET_TENANT_QUOTAS_FILE: quotas,
    };
  });

  beforeEach(async () => {
    agent = await new StubAgent((call, res) =>
      call.url === '/v1/spawn' ? json(res, 201, spawnedVm(call)) : json(res, 500, {}),
    ).start();
    fleet = await startFleet({ env, ops: true, clock: new FakeClock(Date.now()) });
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(
        heartbeat({
          node_id: 'n1',
          spawn_port: agent.port,
          ram_total_mb: 65536,
          vms: [
            vmRecord(ACME_VM, { tenant_id: 'acme' }),
            vmRecord(GLOBEX_VM, { tenant_id: 'globex' }),
            vmRecord(NOBODYS_VM),
          ],
        }),
      )
      .expect(200);
  });

  afterEach(async () => {
    await fleet.close();
    await agent.stop();
  });

  async function logIn(token: string): Promise<{ cookie: string; csrf: string; page: string }> {
    const login = await request(fleet.opsUrl).post('/login').send({ token }).expect(200);
    const header = ([] as string[])
      .concat(login.headers['set-cookie'] ?? [])
      .find((line) => line.startsWith('ppn_'))!;
    const cookie = header.split(';')[0];
    const page = await request(fleet.opsUrl).get('/').set('Cookie', cookie).expect(200);
    const csrf = /<meta name="csrf-token" content="([^"]+)" \/>/.exec(page.text)![1];
    return { cookie, csrf, page: page.text };
  }

  it("logs a tenant in with its token: its own VMs only, every other VM's page and action refused", async () => {
    const { cookie, csrf, page } = await logIn(ACME);
    expect(page).toContain(ACME_VM);
    expect(page).toContain('tenant acme');
    for (const other of [GLOBEX_VM, NOBODYS_VM]) expect(page).not.toContain(other);
    // No tenants' table: that is the operator's.
    expect(page).not.toContain('id="tenants-title"');
    const live = await request(fleet.opsUrl)
      .get('/console/fragments/overview?tenant=globex')
      .set('Cookie', cookie)
      .expect(200);
    expect(live.text).toContain(ACME_VM);
    expect(live.text).not.toContain(GLOBEX_VM);

    await request(fleet.opsUrl).get(`/vms/${ACME_VM}`).set('Cookie', cookie).expect(200);
    await request(fleet.opsUrl).get(`/vms/${GLOBEX_VM}`).set('Cookie', cookie).expect(404);
    await request(fleet.opsUrl).get('/nodes/n1').set('Cookie', cookie).expect(404);
    await request(fleet.opsUrl)
      .get(`/console/vms/${GLOBEX_VM}/serial`)
      .set('Cookie', cookie)
      .expect(404);
    for (const action of ['stop', 'start', 'restart', 'delete', 'forget']) {
      await request(fleet.opsUrl)
        .post(`/console/vms/${GLOBEX_VM}/${action}`)
        .set({ Cookie: cookie, 'X-CSRF-Token': csrf })
        .send({})
        .expect(404);
    }
    const forget = await request(fleet.opsUrl)
      .post(`/console/vms/${ACME_VM}/forget`)
      .set({ Cookie: cookie, 'X-CSRF-Token': csrf })
      .send({})
      .expect(403);
    expect(forget.body.message).toContain('needs the API token (VM_FLEET_API_TOKEN)');
    // The pages read life cycles; nothing was asked of another tenant's VM.
    expect(agent.calls.filter(({ method }) => method !== 'GET')).toEqual([]);
    expect(agent.calls.filter(({ url }) => /globex|nobody/.test(url))).toEqual([]);
    agent.calls.length = 0;

    await request(fleet.opsUrl)
      .post('/console/vms')
      .set({ Cookie: cookie, 'X-CSRF-Token': csrf })
      .send({ vm_type: 'web', ram_mb: 512, vcpu_count: 1, tenant_id: 'globex' })
      .expect(403);
    await request(fleet.opsUrl)
      .post('/console/vms')
      .set({ Cookie: cookie, 'X-CSRF-Token': csrf })
      .send({ vm_type: 'web', ram_mb: 512, vcpu_count: 1 })
      .expect(201);
    const spawned = agent.calls.filter(({ url }) => url === '/v1/spawn');
    expect(spawned.map(({ body }) => (body as SpawnVmRequest).tenant_id)).toEqual(['acme']);
    // acme is now at its quota of 2 VMs.
    const over = await request(fleet.opsUrl)
      .post('/console/vms')
      .set({ Cookie: cookie, 'X-CSRF-Token': csrf })
      .send({ vm_type: 'web', ram_mb: 512, vcpu_count: 1 })
      .expect(429);
    expect(over.body.message).toContain('vms: 2 VMs in use + 1 requested > limit 2 VMs');
  });

  it("shows the operator every tenant's use against its quotas", async () => {
    const { page } = await logIn(API_TOKEN);
    expect(page).toContain('id="tenants-title"');
    expect(page).toMatch(/<a href="\/\?tenant=acme">acme<\/a><\/th>\s*<td class="">1 \/ 2<\/td>/);
    expect(page).toContain(GLOBEX_VM);
    const wrong = await request(fleet.opsUrl)
      .post('/login')
      .send({ token: deriveTenantToken(TENANT_SECRET, 'initech') })
      .expect(401);
    expect(wrong.body.message).toBe(
      "that is neither the API token (VM_FLEET_API_TOKEN) nor a tenant's token",
    );
  });
});

describe('tenant settings at start-up', () => {
  it('refuses a quotas file with bad entries, naming every one', () => {
    const folder = scratchFolder('ppn-tenant-quotas-');
    const file = join(folder, 'quotas.json');
    writeFileSync(
      file,
      JSON.stringify({
        acme: { vms: 5, ram_mb: -1 },
        'bad id!': {},
        globex: { cpus: 4 },
        initech: 'lots',
        umbrella: { disk_gb: 1.5 },
      }),
    );
    const attempt = () =>
      loadFleetConfig({ VM_FLEET_API_TOKEN: API_TOKEN, VM_FLEET_TENANT_QUOTAS_FILE: file });
    expect(attempt).toThrow(FleetConfigError);
    expect(attempt).toThrow(
      `VM_FLEET_TENANT_QUOTAS_FILE ${file} cannot be used: tenant "acme": ram_mb must be a whole number from 0 to 1000000000; tenant "bad id!": a tenant id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit; tenant "globex": "cpus" is not a quota (vms, ram_mb, vcpus, disk_gb); tenant "initech": its quota must be an object such as {"vms": 5} ({} for none); tenant "umbrella": disk_gb must be a whole number from 0 to 1000000000`,
    );
    writeFileSync(file, '{"acme": {"vms": 5},');
    expect(attempt).toThrow(/VM_FLEET_TENANT_QUOTAS_FILE .* cannot be used: it is not JSON/);
  });

  it('refuses the tenant secret without the API token or the quotas file, naming the variables', () => {
    expect(() => loadFleetConfig({ VM_FLEET_TENANT_SECRET: TENANT_SECRET })).toThrow(
      'VM_FLEET_TENANT_SECRET needs VM_FLEET_API_TOKEN: without the API token every route is open to anyone, so tenant tokens would confine no one; VM_FLEET_TENANT_SECRET needs VM_FLEET_TENANT_QUOTAS_FILE',
    );
  });
});
