import type { ServerResponse } from 'node:http';
import request from 'supertest';
import { deriveNodeToken } from '@app/daemon';
import { NODE_STALE_AFTER_MS } from '@app/fleet-domain';
import { VmHostClientSettings } from '../../apps/fleet/src/vms/agent-calls';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { StubAgent, StubAgentCall, json } from '../support/stub-agent';

/**
 * The controller's operations listener (VM_FLEET_OPS_ADDR) over HTTP, with stub agents: every
 * answer checked against openapi/fleet-ops.openapi.json (and the API's against its own).
 */

const API_TOKEN = 'api-token-1a7f3c9e5b0d2864';
const NODE_SECRET = 'fleet-secret-0123456789abcdef0123456789';
const VM = 'vm-00000000000000a1';
/** The contract's node record: exactly these, whatever else a heartbeat carries. */
const NODE_RECORD_FIELDS = [
  'hostname',
  'kvm_available',
  'last_heartbeat',
  'node_id',
  'ram_available_mb',
  'reserved',
  'vm_count',
  'wg_ip',
];

/** A life cycle as a healthy agent reports it: running as asked, nothing under way. */
function lifeCycle(vm_id: string, overrides: object = {}): object {
  return {
    vm_id,
    state: 'Running',
    desired_state: 'running',
    operation: null,
    restart_count: 0,
    last_exit: null,
    reason: null,
    next_start_at: null,
    ...overrides,
  };
}

/** The bearer token the agent was called with. */
function tokenOf(res: ServerResponse): string | undefined {
  return res.req.headers.authorization?.replace(/^Bearer /, '');
}

describe('controller operations listener', () => {
  let fleet: RunningFleet;
  const agents: StubAgent[] = [];

  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.stop()));
    await fleet.close();
  });

  async function agent(
    respond: (call: StubAgentCall, res: ServerResponse) => void,
  ): Promise<StubAgent> {
    const stub = await new StubAgent(respond).start();
    agents.push(stub);
    return stub;
  }

  describe('with VM_FLEET_API_TOKEN and per-node tokens', () => {
    beforeEach(async () => {
      fleet = await startFleet({
        ops: true,
        env: { VM_FLEET_API_TOKEN: API_TOKEN, VM_FLEET_NODE_SECRET: NODE_SECRET },
      });
    });

    const ops = (method: 'get' | 'post', path: string, token: string | null = API_TOKEN) => {
      const sent = request(fleet.opsUrl)[method](path);
      return token === null ? sent : sent.set('Authorization', `Bearer ${token}`);
    };

    async function enroll(nodeId: string, stub: StubAgent, vms = [vmRecord(VM)]): Promise<void> {
      await request(fleet.url)
        .post('/v1/nodes/heartbeat')
        .set('Authorization', `Bearer ${deriveNodeToken(NODE_SECRET, nodeId)}`)
        .send(heartbeat({ node_id: nodeId, spawn_port: stub.port, vms }))
        .expect(200);
    }

    it.each([
      ['no token', null],
      ['a wrong token', 'not-the-api-token-0123456789'],
    ])('refuses %s with 401, calling no agent', async (_, token) => {
      const stub = await agent((_call, res) => json(res, 200, []));
      await enroll('n1', stub);
      for (const [method, path] of [
        ['get', '/v1/vms'],
        ['get', `/v1/vms/${VM}`],
        ['post', `/v1/vms/${VM}/stop`],
        ['post', `/v1/vms/${VM}/start`],
        ['post', `/v1/vms/${VM}/restart`],
        ['get', `/v1/vms/${VM}/console`],
        ['post', `/v1/vms/${VM}/backups`],
        ['get', `/v1/vms/${VM}/backups`],
      ] as const) {
        const { body, headers } = await ops(method, path, token).expect(401);
        expect(body.message).toContain('VM_FLEET_API_TOKEN');
        expect(headers['www-authenticate']).toMatch(/^Bearer realm="service-vm-fleet"/);
      }
      expect(stub.calls).toEqual([]);
    });

    it('takes a heartbeat with or without disk_room, keeps GET /v1/nodes to its eight fields, and lists the disk room here', async () => {
      const diskRoom = {
        room_mb: 40_960,
        committed_mb: 28_672,
        committable_mb: 12_288,
        reserve_mb: 2_048,
        overcommit: 1.5,
      };
      const send = (nodeId: string, fields: object) =>
        request(fleet.url)
          .post('/v1/nodes/heartbeat')
          .set('Authorization', `Bearer ${deriveNodeToken(NODE_SECRET, nodeId)}`)
          .send({ ...heartbeat({ node_id: nodeId }), ...fields });
      await send('n1', { disk_room: diskRoom }).expect(200);
      await send('n2', {}).expect(200);
      const refused = await send('n3', { disk_room: { ...diskRoom, room_mb: -1 } }).expect(400);
      expect(refused.body.message).toBe('disk_room.room_mb must not be less than 0');

      const { body: nodes } = await request(fleet.url)
        .get('/v1/nodes')
        .set('Authorization', `Bearer ${API_TOKEN}`)
        .expect(200);
      expect((nodes as object[]).map((node) => Object.keys(node).sort())).toEqual([
        NODE_RECORD_FIELDS,
        NODE_RECORD_FIELDS,
      ]);
      const { body } = await ops('get', '/v1/node-disks').expect(200);
      expect(body).toEqual([
        { node_id: 'n1', disk_room: diskRoom },
        { node_id: 'n2', disk_room: null },
      ]);
      await ops('get', '/v1/node-disks', null).expect(401);
    });

    it("lists every VM with its life cycle from its own node's agent, called with that node's token", async () => {
      const seen: Record<string, string | undefined> = {};
      const one = await agent((call, res) => {
        seen.one = tokenOf(res);
        json(res, 200, [lifeCycle(VM, { desired_state: 'stopped', state: 'Stopped' })]);
      });
      const two = await agent((call, res) => {
        seen.two = tokenOf(res);
        json(res, 200, [lifeCycle('vm-two', { operation: 'restarting' })]);
      });
      const garbage = await agent((_call, res) => json(res, 200, [{ vm_id: 'vm-g', state: 7 }]));
      await enroll('one', one);
      await enroll('two', two, [vmRecord('vm-two', { tenant_id: 'acme' })]);
      await enroll('garbage', garbage, [vmRecord('vm-g')]);

      const { body } = await ops('get', '/v1/vms').expect(200);
      const byId = Object.fromEntries(
        (body as Array<{ vm_id: string; node_id: string; life_cycle: unknown }>).map((vm) => [
          vm.vm_id,
          vm,
        ]),
      );
      expect(byId[VM]).toEqual({
        ...vmRecord(VM),
        node_id: 'one',
        life_cycle: lifeCycle(VM, { desired_state: 'stopped', state: 'Stopped' }),
      });
      expect(byId['vm-two'].life_cycle).toEqual(lifeCycle('vm-two', { operation: 'restarting' }));
      // An agent that answers what its API does not give: the VM is shown, its life cycle null.
      expect(byId['vm-g']).toEqual({ ...vmRecord('vm-g'), node_id: 'garbage', life_cycle: null });
      expect(one.calls.map(({ method, url }) => `${method} ${url}`)).toEqual([
        'GET /v1/vm-life-cycles',
      ]);
      expect(seen).toEqual({
        one: deriveNodeToken(NODE_SECRET, 'one'),
        two: deriveNodeToken(NODE_SECRET, 'two'),
      });

      const acme = await ops('get', '/v1/vms?tenant_id=acme').expect(200);
      expect(acme.body.map((vm: { vm_id: string }) => vm.vm_id)).toEqual(['vm-two']);
      const bad = await ops('get', '/v1/vms?tenant_id=-bad').expect(400);
      expect(bad.body.message).toContain('tenant_id');
    });

    it('lists the VMs of a node whose agent does not answer in time without a life cycle, the others with theirs', async () => {
      fleet.app.get(VmHostClientSettings).timeoutMs = 300;
      const silent = await agent(() => undefined);
      const live = await agent((_call, res) => json(res, 200, [lifeCycle('vm-live')]));
      await enroll('silent', silent, [vmRecord('vm-silent')]);
      await enroll('live', live, [vmRecord('vm-live')]);
      const { body } = await ops('get', '/v1/vms').expect(200);
      expect(
        Object.fromEntries(
          (body as Array<{ vm_id: string; life_cycle: unknown }>).map((vm) => [
            vm.vm_id,
            vm.life_cycle,
          ]),
        ),
      ).toEqual({ 'vm-silent': null, 'vm-live': lifeCycle('vm-live') });
      // An action on its VM is a 502, in fixed words.
      const { body: refused } = await ops('post', '/v1/vms/vm-silent/stop').expect(502);
      expect(refused.message).toBe(
        'vm vm-silent: the agent of node silent could not be reached for the stop',
      );
    });

    it("stops, starts and restarts through the agent of the VM's node, with that node's token", async () => {
      const other = await agent((_call, res) => json(res, 500));
      const owner = await agent((call, res) => {
        const operation = /\/(stop|start|restart)$/.exec(call.url)?.[1];
        json(
          res,
          202,
          lifeCycle(VM, {
            operation: `${operation === 'stop' ? 'stopp' : operation === 'start' ? 'start' : 'restart'}ing`,
            desired_state: operation === 'stop' ? 'stopped' : 'running',
          }),
        );
        expect(tokenOf(res)).toBe(deriveNodeToken(NODE_SECRET, 'owner'));
      });
      await enroll('other', other, [vmRecord('vm-other')]);
      await enroll('owner', owner);

      const stopped = await ops('post', `/v1/vms/${VM}/stop`).send({}).expect(202);
      expect(stopped.body).toEqual(
        lifeCycle(VM, { operation: 'stopping', desired_state: 'stopped' }),
      );
      await ops('post', `/v1/vms/${VM}/start`).expect(202);
      const restarted = await ops('post', `/v1/vms/${VM}/restart`)
        .send({ force: true, timeout_s: 5 })
        .expect(202);
      expect(restarted.body.operation).toBe('restarting');
      expect(owner.calls).toEqual([
        { method: 'POST', url: `/v1/vms/${VM}/stop`, body: { force: false, timeout_s: 60 } },
        { method: 'POST', url: `/v1/vms/${VM}/start`, body: undefined },
        { method: 'POST', url: `/v1/vms/${VM}/restart`, body: { force: true, timeout_s: 5 } },
      ]);
      expect(other.calls).toEqual([]);
    });

    it("reads the console from the VM's node, passing from and max_bytes on", async () => {
      const owner = await agent((_call, res) =>
        json(res, 200, { vm_id: VM, from: 100, next: 140, text: 'login: ', reset: false }),
      );
      await enroll('owner', owner);
      const { body } = await ops('get', `/v1/vms/${VM}/console?from=100&max_bytes=4096`).expect(
        200,
      );
      expect(body).toEqual({ vm_id: VM, from: 100, next: 140, text: 'login: ', reset: false });
      expect(owner.calls.map(({ url }) => url)).toEqual([
        `/v1/vms/${VM}/console?from=100&max_bytes=4096`,
      ]);
    });

    it("takes and lists a VM's backups through its node's agent, with the node's id", async () => {
      const backups = {
        vm_id: VM,
        backups: [
          {
            backup_id: '20260806T110000Z-3f2a/0000',
            kind: 'full',
            taken_at: '2026-08-06T11:00:00.000Z',
            size_bytes: 1_048_576,
            path: `/mnt/usb/${VM}/20260806T110000Z-3f2a/0000-full.qcow2`,
          },
        ],
        in_progress_since: null,
        last_error: null,
      };
      const owner = await agent((call, res) =>
        call.method === 'POST'
          ? json(res, 202, { ...backups, in_progress_since: '2026-08-06T12:00:00.000Z' })
          : json(res, 200, backups),
      );
      await enroll('owner', owner);
      const begun = await ops('post', `/v1/vms/${VM}/backups`).expect(202);
      expect(begun.body).toEqual({
        ...backups,
        in_progress_since: '2026-08-06T12:00:00.000Z',
        node_id: 'owner',
      });
      const listed = await ops('get', `/v1/vms/${VM}/backups`).expect(200);
      expect(listed.body).toEqual({ ...backups, node_id: 'owner' });
      expect(owner.calls.map(({ method, url }) => `${method} ${url}`)).toEqual([
        `POST /v1/vms/${VM}/backups`,
        `GET /v1/vms/${VM}/backups`,
      ]);
    });

    it("words the agent's backup refusals itself, and refuses a path from the agent that is not text", async () => {
      const replies = [
        {
          status: 409,
          body: {
            statusCode: 409,
            message: 'backups are off on this node (VM_BACKUP_DIR is not set)',
          },
        },
        { status: 409, body: { statusCode: 409, message: `vm ${VM} is already being backed up` } },
        {
          status: 200,
          body: {
            vm_id: VM,
            backups: [
              {
                backup_id: '20260806T110000Z-3f2a/0000',
                kind: 'full',
                taken_at: '2026-08-06T11:00:00.000Z',
                size_bytes: 1,
                path: '/mnt/\u001b[2J',
              },
            ],
            in_progress_since: null,
            last_error: null,
          },
        },
      ];
      const owner = await agent((_call, res) => {
        const reply = replies.shift()!;
        json(res, reply.status, reply.body);
      });
      await enroll('owner', owner);
      const off = await ops('post', `/v1/vms/${VM}/backups`).expect(409);
      expect(off.body.message).toBe(
        "node owner keeps no backups (its agent's VM_BACKUP_DIR is not set)",
      );
      const busy = await ops('post', `/v1/vms/${VM}/backups`).expect(409);
      expect(busy.body.message).toBe(
        `vm ${VM} on node owner is already being backed up; ppn-fleet vm copies ${VM} shows when it is taken`,
      );
      const hostile = await ops('get', `/v1/vms/${VM}/backups`).expect(502);
      expect(hostile.body.message).toBe(
        `vm ${VM}: the agent of node owner answered the backups read unusably`,
      );
    });

    it('gets one VM with its life cycle, null when its agent does not know it', async () => {
      const owner = await agent((call, res) =>
        call.url.endsWith(VM)
          ? json(res, 200, lifeCycle(VM, { restart_count: 2, last_exit: 'QEMU ended' }))
          : json(res, 404, { statusCode: 404, message: 'vm vm-gone is not on this node' }),
      );
      await enroll('owner', owner, [vmRecord(VM), vmRecord('vm-gone')]);
      const { body } = await ops('get', `/v1/vms/${VM}`).expect(200);
      expect(body).toEqual({
        ...vmRecord(VM),
        node_id: 'owner',
        life_cycle: lifeCycle(VM, { restart_count: 2, last_exit: 'QEMU ended' }),
      });
      expect(owner.calls.map(({ url }) => url)).toEqual([`/v1/vm-life-cycles/${VM}`]);
      const gone = await ops('get', '/v1/vms/vm-gone').expect(200);
      expect(gone.body.life_cycle).toBeNull();
    });

    it('answers 404 naming an unknown VM, and 400 naming a bad field, calling no agent', async () => {
      const owner = await agent((_call, res) => json(res, 202, lifeCycle(VM)));
      await enroll('owner', owner);
      for (const path of ['/v1/vms/vm-nowhere', '/v1/vms/vm-nowhere/stop']) {
        const method = path.endsWith('stop') ? 'post' : 'get';
        const { body } = await ops(method, path).expect(404);
        expect(body.message).toBe('vm vm-nowhere is not listed on any live node');
      }
      const cases: Array<[request.Test, string]> = [
        [ops('post', `/v1/vms/${VM}/stop`).send({ timeout_s: 0 }), 'timeout_s'],
        [ops('post', `/v1/vms/${VM}/restart`).send({ timeout_s: 601 }), 'timeout_s'],
        [ops('post', `/v1/vms/${VM}/stop`).send({ force: 'yes' }), 'force'],
        [ops('get', `/v1/vms/${VM}/console?max_bytes=0`), 'max_bytes'],
        [ops('get', `/v1/vms/${VM}/console?from=-1`), 'from'],
        [ops('post', '/v1/vms/-bad-/start'), 'vm_id'],
      ];
      for (const [sent, field] of cases) {
        const { body } = await sent.expect(400);
        expect(body.message).toContain(field);
      }
      expect(owner.calls).toEqual([]);
    });

    it('answers 409 naming the VM and its node for a VM of a silent node, calling nothing', async () => {
      const quiet = await agent((_call, res) => json(res, 202, lifeCycle(VM)));
      const live = await agent((_call, res) => json(res, 200, []));
      await enroll('quiet', quiet);
      fleet.clock.advance(NODE_STALE_AFTER_MS + 1);
      await enroll('live', live, []);
      for (const action of ['stop', 'start', 'restart']) {
        const { body } = await ops('post', `/v1/vms/${VM}/${action}`).expect(409);
        expect(body.message).toContain(`vm ${VM} is on node quiet`);
        expect(body.message).toContain(`for the ${action}`);
      }
      await ops('get', `/v1/vms/${VM}/console`).expect(409);
      const listed = await ops('get', '/v1/vms').expect(200);
      expect(listed.body).toEqual([
        expect.objectContaining({ vm_id: VM, node_id: 'quiet', life_cycle: null }),
      ]);
      expect(quiet.calls).toEqual([]);
    });

    describe("the agent's refusals, in the controller's own words", () => {
      let answer: (res: ServerResponse) => void;
      beforeEach(async () => {
        const owner = await agent((_call, res) => answer(res));
        await enroll('owner', owner);
      });

      it.each([
        [`vm ${VM} is already stopped`, 'stop', `vm ${VM} on node owner is already stopped`],
        [`vm ${VM} is already running`, 'start', `vm ${VM} on node owner is already running`],
        [
          `vm ${VM} is being created; try again once it is Running`,
          'restart',
          `vm ${VM} on node owner is still being created; try the restart again once it is Running`,
        ],
        [
          `vm ${VM} is already stopping`,
          'start',
          `vm ${VM} on node owner is already stopping; try the start again once that has ended`,
        ],
        [
          `vm ${VM} cannot be read on its node (sidecar unreadable); only a delete acts on it`,
          'stop',
          `vm ${VM} on node owner cannot be read by its agent (its record on the node is unreadable); only a delete acts on it`,
        ],
        [
          'something else entirely <script>',
          'stop',
          `vm ${VM} on node owner: its agent refused the stop as conflicting with the VM's state there`,
        ],
      ])('409 "%s" to a %s: 409 "%s"', async (agentMessage, action, message) => {
        answer = (res) => json(res, 409, { statusCode: 409, message: agentMessage });
        const { body } = await ops('post', `/v1/vms/${VM}/${action}`).expect(409);
        expect(body).toEqual({ statusCode: 409, error: 'Conflict', message });
      });

      it('404: the VM is not on its node any more, naming both', async () => {
        answer = (res) =>
          json(res, 404, { statusCode: 404, message: `vm ${VM} is not on this node` });
        const { body } = await ops('post', `/v1/vms/${VM}/stop`).expect(404);
        expect(body.message).toBe(
          `vm ${VM} is not on node owner any more (its agent does not know it); it leaves the listing at the node's next heartbeat`,
        );
      });

      it("422 to a start: the node's reason, printable", async () => {
        answer = (res) =>
          json(res, 422, {
            statusCode: 422,
            message: 'ram_mb: 2048 MB does not fit\u001b[2J on this node',
          });
        const { body } = await ops('post', `/v1/vms/${VM}/start`).expect(422);
        expect(body.message).toBe(
          `vm ${VM} cannot be started on node owner: ram_mb: 2048 MB does not fit[2J on this node`,
        );
      });

      it.each([
        ['a body that is not a life cycle', (res: ServerResponse) => json(res, 202, { ok: true })],
        ["another VM's life cycle", (res: ServerResponse) => json(res, 202, lifeCycle('vm-x'))],
        ['not JSON', (res: ServerResponse) => res.writeHead(202).end('<html>hello</html>')],
        [
          'a 500 with its own message',
          (res: ServerResponse) => json(res, 500, { statusCode: 500, message: 'secret detail' }),
        ],
        [
          'a 404 in other words (no such route)',
          (res: ServerResponse) => json(res, 404, { statusCode: 404, message: 'Cannot POST' }),
        ],
      ])('%s: 502 in fixed words, nothing of it passed on', async (_, respond) => {
        answer = respond;
        const { body } = await ops('post', `/v1/vms/${VM}/restart`).expect(502);
        expect(body.message).toBe(
          `vm ${VM}: the agent of node owner answered the restart unusably`,
        );
      });
    });
  });

  describe('without tokens', () => {
    beforeEach(async () => {
      fleet = await startFleet({ ops: true });
    });

    it('is open, serves its Swagger UI at /docs, and leaves the API with its seven routes', async () => {
      const stub = await agent((_call, res) => json(res, 202, lifeCycle(VM)));
      await request(fleet.url)
        .post('/v1/nodes/heartbeat')
        .send(heartbeat({ node_id: 'n1', spawn_port: stub.port, vms: [vmRecord(VM)] }))
        .expect(200);
      await request(fleet.opsUrl)
        .post(`/v1/vms/${VM}/stop`)
        .set('Content-Type', 'application/json')
        .expect(202);
      expect(stub.calls[0].url).toBe(`/v1/vms/${VM}/stop`);

      const docs = await request(fleet.opsUrl).get('/docs-json').expect(200);
      expect(Object.keys(docs.body.paths).sort()).toEqual([
        '/v1/node-disks',
        '/v1/nodes/{node_id}/declare-dead',
        '/v1/nodes/{node_id}/drain',
        '/v1/nodes/{node_id}/undrain',
        '/v1/vms',
        '/v1/vms/{vm_id}',
        '/v1/vms/{vm_id}/backups',
        '/v1/vms/{vm_id}/console',
        '/v1/vms/{vm_id}/copies',
        '/v1/vms/{vm_id}/move',
        '/v1/vms/{vm_id}/restart',
        '/v1/vms/{vm_id}/restore',
        '/v1/vms/{vm_id}/start',
        '/v1/vms/{vm_id}/stop',
      ]);
      await request(fleet.opsUrl).get('/docs').expect(200).expect('content-type', /html/);
      const api = await request(fleet.url).get('/docs-json').expect(200);
      const routes = Object.entries(api.body.paths as Record<string, object>).flatMap(
        ([path, operations]) => Object.keys(operations).map((method) => `${method} ${path}`),
      );
      expect(routes).toHaveLength(7);
      await request(fleet.url).post(`/v1/vms/${VM}/stop`).expect(404);
      await request(fleet.url).get(`/v1/vms/${VM}`).expect(404);
      await request(fleet.url).get(`/v1/vms/${VM}/console`).expect(404);
    });

    it('refuses, open as it is, a write a cross-site form or no-CORS fetch could send, calling no agent', async () => {
      const stub = await agent((_call, res) => json(res, 202, lifeCycle(VM)));
      await request(fleet.url)
        .post('/v1/nodes/heartbeat')
        .send(heartbeat({ node_id: 'n1', spawn_port: stub.port, vms: [vmRecord(VM)] }))
        .expect(200);
      for (const action of ['stop', 'start', 'restart']) {
        // What fetch(url, {method: 'POST', mode: 'no-cors'}) from any page sends.
        const bare = await request(fleet.opsUrl).post(`/v1/vms/${VM}/${action}`).expect(403);
        expect(bare.body.message).toBe(
          'refused: a state-changing request needs Content-Type: application/json (a body or not) or an Authorization header',
        );
        const form = await request(fleet.opsUrl)
          .post(`/v1/vms/${VM}/${action}`)
          .set('Content-Type', 'text/plain')
          .send('{}')
          .expect(403);
        expect(form.body.message).toMatch(/^refused: a state-changing request needs/);
        for (const [header, value] of [
          ['Sec-Fetch-Site', 'cross-site'],
          ['Sec-Fetch-Site', 'same-site'],
          ['Origin', 'http://evil.example'],
        ]) {
          const crossSite = await request(fleet.opsUrl)
            .post(`/v1/vms/${VM}/${action}`)
            .set(header, value)
            .send({})
            .expect(403);
          expect(crossSite.body.message).toBe('refused: this request came from another site');
        }
      }
      expect(stub.calls).toEqual([]);
      await request(fleet.opsUrl)
        .post(`/v1/vms/${VM}/start`)
        .set('Authorization', 'Bearer anything-at-all-0123456789')
        .expect(202);
      await request(fleet.opsUrl)
        .post(`/v1/vms/${VM}/restart`)
        .set('Sec-Fetch-Site', 'same-origin')
        .send({})
        .expect(202);
      expect(stub.calls.map(({ url }) => url)).toEqual([
        `/v1/vms/${VM}/start`,
        `/v1/vms/${VM}/restart`,
      ]);
      // The API on 9203 asks nothing of the kind: the how-tos' curl lines are unchanged.
      await request(fleet.url)
        .post('/v1/nodes/heartbeat')
        .set('Origin', 'http://evil.example')
        .send(heartbeat({ node_id: 'n1', spawn_port: stub.port, vms: [vmRecord(VM)] }))
        .expect(200);
    });

    it('answers only to its own names: a DNS-rebound Host is refused 421', async () => {
      for (const [method, path] of [
        ['get', '/v1/vms'],
        ['get', '/docs'],
        ['post', `/v1/vms/${VM}/stop`],
      ] as const) {
        const client = request(fleet.opsUrl);
        const refused = await client[method](path)
          .set('Host', 'rebind.attacker.example:9206')
          .set('Content-Type', 'application/json')
          .expect(421);
        expect(refused.body.message).toBe(
          'Host rebind.attacker.example:9206 is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS',
        );
      }
      const port = new URL(fleet.opsUrl).port;
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'LocalHost']) {
        await request(fleet.opsUrl).get('/v1/vms').set('Host', host).expect(200);
      }
    });

    it("serves Swagger UI with the console's security headers: not frameable, no foreign script", async () => {
      for (const path of ['/docs', '/docs/swagger-ui-init.js', '/docs-json']) {
        const answer = await request(fleet.opsUrl).get(path).expect(200);
        expect(answer.headers['content-security-policy']).toContain("frame-ancestors 'none'");
        expect(answer.headers['content-security-policy']).toContain("script-src 'self';");
        expect(answer.headers['content-security-policy']).toMatch(/^default-src 'none'; /);
        expect(answer.headers['x-frame-options']).toBe('DENY');
        expect(answer.headers['x-content-type-options']).toBe('nosniff');
        expect(answer.headers['referrer-policy']).toBe('no-referrer');
      }
    });
  });

  describe('with VM_FLEET_OPS_HOSTS', () => {
    beforeEach(async () => {
      fleet = await startFleet({
        ops: true,
        env: { VM_FLEET_OPS_HOSTS: 'Fleet.Example.org,10.8.0.1' },
      });
    });

    it('answers to those names too, and to no other', async () => {
      await request(fleet.opsUrl).get('/v1/vms').set('Host', 'fleet.example.org:9206').expect(200);
      await request(fleet.opsUrl).get('/v1/vms').set('Host', 'FLEET.example.org.').expect(200);
      await request(fleet.opsUrl).get('/v1/vms').set('Host', '10.8.0.1:9206').expect(200);
      await request(fleet.opsUrl).get('/v1/vms').set('Host', 'other.example.org').expect(421);
    });
  });
});
