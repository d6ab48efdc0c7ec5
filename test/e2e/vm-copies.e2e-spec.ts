import request from 'supertest';
import { grantCopies } from '../support/granted-copies';
import { NODE_STALE_AFTER_MS } from '@app/fleet-domain';
import type { HeartbeatReplica, HeartbeatVm } from '@app/fleet-domain';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { StubAgent, json, spawnedVm } from '../support/stub-agent';

/**
 * What the controller shows of a VM's copies: the listing's copied_at and copy_node_id (API and
 * operations listener) and GET /v1/vms/{vm_id}/copies, from synthetic heartbeats carrying
 * replicas and copy policies, with stub agents for the backups. Every answer is checked against
 * the committed OpenAPI documents.
 */

const API_TOKEN = 'api-token-5c2e8a1f9b3d7064';
const VM = 'vm-00000000000000c1';
const PLAIN_VM = 'vm-00000000000000c2';
const POLICY = { count: 1, every_s: 60 };

function replica(vm_id: string, source_node_id: string, copied_at: string): HeartbeatReplica {
  return { vm_id, source_node_id, copied_at, size_bytes: 5_242_880 };
}

describe('copies of VMs, as the controller shows them', () => {
  let fleet: RunningFleet;
  const agents: StubAgent[] = [];

  beforeEach(async () => {
    fleet = await startFleet({ ops: true, env: { VM_FLEET_API_TOKEN: API_TOKEN } });
  });

  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.stop()));
    await fleet.close();
  });

  const api = (path: string) =>
    request(fleet.url).get(path).set('Authorization', `Bearer ${API_TOKEN}`);
  const ops = (path: string) =>
    request(fleet.opsUrl).get(path).set('Authorization', `Bearer ${API_TOKEN}`);

  async function beat(
    node_id: string,
    vms: HeartbeatVm[],
    replicas: HeartbeatReplica[] = [],
    spawn_port = 9,
  ): Promise<void> {
    grantCopies(fleet, node_id, replicas);
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .set('Authorization', `Bearer ${API_TOKEN}`)
      .send(heartbeat({ node_id, vms, replicas, spawn_port }))
      .expect(200);
  }

  async function backupsAgent(): Promise<StubAgent> {
    const stub = await new StubAgent((call, res) =>
      call.url === `/v1/vms/${VM}/backups`
        ? json(res, 200, {
            vm_id: VM,
            backups: [
              {
                backup_id: '20261205T041700Z-3f2a/0001',
                kind: 'incremental',
                taken_at: '2026-08-06T11:59:00.000Z',
                size_bytes: 1_048_576,
                path: `/mnt/usb/vm-backups/${VM}/20261205T041700Z-3f2a/0001-incremental.qcow2`,
              },
            ],
            in_progress_since: null,
            last_error: null,
          })
        : json(res, 200, []),
    ).start();
    agents.push(stub);
    return stub;
  }

  it("lists each VM's freshest copy sent by its node and held on another live node, on both listeners", async () => {
    await beat('src', [{ ...vmRecord(VM), copies: POLICY }, vmRecord(PLAIN_VM)]);
    await beat('peer-a', [], [replica(VM, 'src', '2026-08-06T11:59:30.000Z')]);
    await beat('peer-b', [], [replica(VM, 'src', '2026-08-06T11:59:45.000Z')]);
    // Sent by another node (one that ran it before): not a copy of the VM as it runs now.
    await beat('peer-c', [], [replica(VM, 'old', '2026-08-06T11:59:59.000Z')]);

    for (const listing of [await api('/v1/vms').expect(200), await ops('/v1/vms').expect(200)]) {
      const byId = new Map(listing.body.map((vm: { vm_id: string }) => [vm.vm_id, vm]));
      expect(byId.get(VM)).toMatchObject({
        node_id: 'src',
        copied_at: '2026-08-06T11:59:45.000Z',
        copy_node_id: 'peer-b',
      });
      // An agent that reports no policy and no copy held: the fields are left out, as before.
      expect(Object.keys(byId.get(PLAIN_VM) as object)).not.toContain('copied_at');
    }
  });

  it("shows null while a VM that wants copies has none, and a copy of a silent node's VM while its holder is live", async () => {
    await beat('src', [{ ...vmRecord(VM), copies: POLICY }]);
    let [listed] = (await api('/v1/vms').expect(200)).body;
    expect(listed).toMatchObject({ copied_at: null, copy_node_id: null });

    // The VM's node dies for good: its copy on a live peer is what a restore would use.
    fleet.clock.advance(NODE_STALE_AFTER_MS + 1);
    await beat('peer', [], [replica(VM, 'src', '2026-08-06T11:59:30.000Z')]);
    [listed] = (await api('/v1/vms').expect(200)).body;
    expect(listed).toMatchObject({
      vm_id: VM,
      node_id: 'src',
      node_silent_since: expect.any(String),
      copied_at: '2026-08-06T11:59:30.000Z',
      copy_node_id: 'peer',
    });
    const copies = await ops(`/v1/vms/${VM}/copies`).expect(200);
    expect(copies.body).toMatchObject({
      node_id: 'src',
      policy: POLICY,
      copy_node_id: 'peer',
      backups: null,
      backups_unread: expect.stringContaining('node src is silent since'),
    });

    // The peer drops out too: nothing says its copy is still there.
    fleet.clock.advance(NODE_STALE_AFTER_MS + 1);
    await beat('other', []);
    [listed] = (await api('/v1/vms').expect(200)).body;
    expect(listed).toMatchObject({ copied_at: null, copy_node_id: null });
  });

  it('ignores a node claiming a copy of a VM it was never granted (no copy node, no restore source)', async () => {
    await beat('src', [{ ...vmRecord(VM), copies: POLICY }]);
    // No grant recorded for 'evil' (beat() records one): it claims a huge, fresh copy.
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(
        heartbeat({
          node_id: 'evil',
          spawn_port: 9,
          replicas: [{ ...replica(VM, 'src', '2026-08-06T11:59:30.000Z'), size_bytes: 1e15 }],
        }),
      )
      .expect(200);
    const [listed] = (await api('/v1/vms').expect(200)).body;
    expect(listed).toMatchObject({ copied_at: null, copy_node_id: null });
    const copies = await ops(`/v1/vms/${VM}/copies`).expect(200);
    expect(copies.body).toMatchObject({ copy_node_id: null });
  });

  it('answers GET /v1/vms/{vm_id}/copies with the policy, every copy freshest first, and the backups its agent lists', async () => {
    const owner = await backupsAgent();
    await beat('src', [{ ...vmRecord(VM), copies: { count: 2, every_s: 30 } }], [], owner.port);
    await beat('peer-a', [], [replica(VM, 'src', '2026-08-06T11:59:30.000Z')]);
    await beat('peer-b', [], [replica(VM, 'old', '2026-08-06T11:59:50.000Z')]);

    const { body } = await ops(`/v1/vms/${VM}/copies`).expect(200);
    expect(body).toEqual({
      vm_id: VM,
      node_id: 'src',
      policy: { count: 2, every_s: 30 },
      copied_at: '2026-08-06T11:59:30.000Z',
      copy_node_id: 'peer-a',
      copies: [
        { ...replica(VM, 'old', '2026-08-06T11:59:50.000Z'), node_id: 'peer-b' },
        { ...replica(VM, 'src', '2026-08-06T11:59:30.000Z'), node_id: 'peer-a' },
      ],
      backups: {
        vm_id: VM,
        backups: [expect.objectContaining({ kind: 'incremental', size_bytes: 1_048_576 })],
        in_progress_since: null,
        last_error: null,
      },
      backups_unread: null,
    });
    expect(owner.calls.map(({ method, url }) => `${method} ${url}`)).toEqual([
      `GET /v1/vms/${VM}/backups`,
    ]);
  });

  it('shows the copies with the backups left out and why when the agent is unreachable or answers unusably', async () => {
    const owner = await backupsAgent();
    await beat('src', [vmRecord(VM)], [], owner.port);
    await beat('peer', [], [replica(VM, 'src', '2026-08-06T11:59:30.000Z')]);

    owner.answerWith((_call, res) => json(res, 200, { vm_id: 'vm-someone-else', hostile: '<x>' }));
    let { body } = await ops(`/v1/vms/${VM}/copies`).expect(200);
    expect(body).toMatchObject({
      policy: null,
      copy_node_id: 'peer',
      backups: null,
      backups_unread: 'the agent of node src answered the backups read unusably',
    });
    expect(JSON.stringify(body)).not.toContain('hostile');

    await owner.stop();
    ({ body } = await ops(`/v1/vms/${VM}/copies`).expect(200));
    expect(body).toMatchObject({
      copies: [expect.objectContaining({ node_id: 'peer' })],
      backups: null,
      backups_unread: 'the agent of node src could not be reached',
    });
  });

  it('answers 404 for a VM no node lists, 400 naming a bad vm_id, 401 without the token', async () => {
    const missing = await ops(`/v1/vms/${VM}/copies`).expect(404);
    expect(missing.body.message).toContain(VM);
    const bad = await ops('/v1/vms/-bad/copies').expect(400);
    expect(bad.body.message).toContain('vm_id');
    await request(fleet.opsUrl).get(`/v1/vms/${VM}/copies`).expect(401);
  });
});

describe('copies in the web console and in creates', () => {
  let fleet: RunningFleet;
  let agent: StubAgent;

  beforeEach(async () => {
    fleet = await startFleet({ ops: true });
    agent = await new StubAgent((call, res) => {
      if (call.method === 'POST' && call.url === '/v1/spawn')
        return json(res, 201, spawnedVm(call));
      if (call.url === `/v1/vms/${VM}/backups`) {
        return json(res, 200, {
          vm_id: VM,
          backups: [],
          in_progress_since: null,
          last_error: null,
        });
      }
      json(res, 404, { statusCode: 404, message: 'not here' });
    }).start();
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(
        heartbeat({
          node_id: 'src',
          spawn_port: agent.port,
          vms: [{ ...vmRecord(VM), copies: POLICY }],
        }),
      )
      .expect(200);
    grantCopies(fleet, 'peer', [replica(VM, 'src', '2026-08-06T11:59:18.000Z')]);
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(
        heartbeat({
          node_id: 'peer',
          spawn_port: 9,
          replicas: [replica(VM, 'src', '2026-08-06T11:59:18.000Z')],
        }),
      )
      .expect(200);
  });

  afterEach(async () => {
    await agent.stop();
    await fleet.close();
  });

  async function session(): Promise<{ cookie: string; csrf: string; page: string }> {
    const page = await request(fleet.opsUrl).get('/').expect(200);
    const cookie = String(page.headers['set-cookie']).split(';')[0];
    const csrf = /<meta name="csrf-token" content="([^"]+)" \/>/.exec(page.text)?.[1] ?? '';
    return { cookie, csrf, page: page.text };
  }

  it("shows a VM's copies and backups on its page and in the part the page refreshes", async () => {
    const { cookie } = await session();
    const page = await request(fleet.opsUrl).get(`/vms/${VM}`).set('Cookie', cookie).expect(200);
    expect(page.text).toContain('Copies and backups');
    expect(page.text).toContain(`data-live="/console/fragments/vms/${VM}/copies"`);
    expect(page.text).toContain('1 copy on other nodes, every 60 s');
    expect(page.text).toContain('<a href="/nodes/peer">peer</a>');
    expect(page.text).toContain('(42 s ago)');
    expect(page.text).toContain("No backup in node src's VM_BACKUP_DIR.");
    fleet.clock.advance(20_000);
    const part = await request(fleet.opsUrl)
      .get(`/console/fragments/vms/${VM}/copies`)
      .set('Cookie', cookie)
      .expect(200);
    expect(part.text).toContain('(62 s ago)');
    await request(fleet.opsUrl)
      .get('/console/fragments/vms/vm-nope/copies')
      .set('Cookie', cookie)
      .expect(404);
  });

  it('creates from the form with its copy fields as the policy, and refuses an interval without a count', async () => {
    const { cookie, csrf, page } = await session();
    expect(page).toContain('name="copies_count"');
    expect(page).toContain('name="copies_every_s"');
    const post = (body: object) =>
      request(fleet.opsUrl)
        .post('/console/vms')
        .set('Cookie', cookie)
        .set('X-CSRF-Token', csrf)
        .send({ vm_type: 'web', ram_mb: 512, vcpu_count: 1, ...body });
    await post({ copies_count: 2, copies_every_s: 30, disk_gb: 20 }).expect(201);
    await post({ copies_count: 0 }).expect(201);
    await post({}).expect(201);
    const spawns = agent.calls.filter((call) => call.url === '/v1/spawn');
    // The form's disk size reaches the agent as the API's disk_gb.
    expect((spawns[0].body as { disk_gb?: number }).disk_gb).toBe(20);
    expect(spawns.map((call) => (call.body as { copies?: object }).copies)).toEqual([
      { count: 2, every_s: 30 },
      { count: 0, every_s: 60 },
      // None chosen: the controller's defaults (VM_FLEET_COPIES, VM_FLEET_COPY_EVERY_S).
      { count: 1, every_s: 60 },
    ]);
    const lone = await post({ copies_every_s: 60 }).expect(400);
    expect(JSON.stringify(lone.body.message)).toContain('copies_count');
    const short = await post({ copies_count: 1, copies_every_s: 29 }).expect(400);
    expect(JSON.stringify(short.body.message)).toContain('copies_every_s must not be less than 30');
    expect(agent.calls.filter((call) => call.url === '/v1/spawn')).toHaveLength(3);
  });

  it('answers a create that asks for copies with the VM and no copy yet', async () => {
    const created = await request(fleet.url)
      .post('/v1/vms')
      .send({ vm_type: 'web', ram_mb: 512, vcpu_count: 1, preferred_node: 'src', copies: POLICY })
      .expect(201);
    expect(created.body).toMatchObject({ node_id: 'src', copied_at: null, copy_node_id: null });
    const plain = await request(fleet.url)
      .post('/v1/vms')
      .send({ vm_type: 'web', ram_mb: 512, vcpu_count: 1, preferred_node: 'src' })
      .expect(201);
    expect(Object.keys(plain.body as object)).not.toContain('copied_at');
  });
});
