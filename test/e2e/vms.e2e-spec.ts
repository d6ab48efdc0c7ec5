import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Logger } from '@nestjs/common';
import request from 'supertest';
import {
  AGENT_REQUEST_TIMEOUT_MS,
  IDEMPOTENCY_KEY_TTL_MS,
  NODE_STALE_AFTER_MS,
  RAM_HOLD_MARGIN_MS,
  SPAWN_DEADLINE_SKEW_MS,
  VmRecord,
  holdRam,
  liveSince,
  toRfc3339,
} from '@app/fleet-domain';
import { KeyClaims, OwnKeyClaim } from '../../apps/fleet/src/nodes/key-claims.repository';
import { NodesRepository } from '../../apps/fleet/src/nodes/nodes.repository';
import { NodesService } from '../../apps/fleet/src/nodes/nodes.service';
import { StoreUnavailableError } from '../../apps/fleet/src/nodes/store-unavailable.error';
import { spawnKeyOf as spawnKeyFor } from '../../apps/fleet/src/vms/spawn-key';
import { VmCreateSettings } from '../../apps/fleet/src/vms/vm-create.settings';
import { VmHostClientSettings } from '../../apps/fleet/src/vms/agent-calls';
import { eventually } from '../support/daemons';
import { unansweredPort } from '../support/unanswered-port';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';
import {
  StubAgent,
  StubAgentCall,
  json,
  spawnKeyOf,
  spawnedVm as spawned,
} from '../support/stub-agent';

/**
 * How long a hold lives: the dispatch timeout plus the margin. The controller waits the
 * product's 10 s for an agent (a stub answers at once, however busy the machine); the tests
 * move the fake clock past a hold's deadline, they never wait for it.
 */
const HOLD_LIFETIME_MS = AGENT_REQUEST_TIMEOUT_MS + RAM_HOLD_MARGIN_MS;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** POST /v1/vms and DELETE /v1/vms/:vm_id of the controller, with stub agents. */

describe('fleet controller: VMs', () => {
  let fleet: RunningFleet;
  const agents: StubAgent[] = [];

  beforeEach(async () => {
    fleet = await startFleet();
  });

  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.stop()));
    await fleet.close();
  });

  async function agent(respond: ConstructorParameters<typeof StubAgent>[0]): Promise<StubAgent> {
    const stub = await new StubAgent(respond).start();
    agents.push(stub);
    return stub;
  }

  async function enroll(node_id: string, stub: StubAgent | { port: number }, extra: object = {}) {
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id, spawn_port: stub.port, ...extra }))
      .expect(200);
  }

  /**
   * The controller waits the product's 10 s for an agent, plenty for a cold first call on a
   * busy machine; a test of an agent that never answers makes it wait 300 ms.
   */
  function waitForAgentsMs(ms: number): void {
    fleet.app.get(VmHostClientSettings).timeoutMs = ms;
  }

  const create = (body: object, key?: string) => {
    const post = request(fleet.url).post('/v1/vms');
    return (key === undefined ? post : post.set('Idempotency-Key', key)).send(body);
  };
  const node = async (nodeId: string) =>
    (await request(fleet.url).get(`/v1/nodes/${nodeId}`).expect(200)).body;
  const small = { vm_type: 'web', ram_mb: 1024, vcpu_count: 1 };

  it('places on the node with the most free RAM, dispatches, and records the VM with its tenant', async () => {
    const small1 = await agent((call, res) => json(res, 201, spawned(call)));
    const big = await agent((call, res) => json(res, 201, spawned(call)));
    await enroll('small', small1, { ram_total_mb: 8192, ram_used_mb: 4096 });
    await enroll('big', big, { ram_total_mb: 65536, ram_used_mb: 4096 });

    const { body } = await create({ ...small, tenant_id: 'acme' }).expect(201);
    // The controller minted the id and sent it with the spawn; the agent made the VM under it.
    const minted = (big.calls[0]?.body as { vm_id?: string } | undefined)?.vm_id;
    expect(minted).toMatch(/^vm-[0-9a-f]{16}$/);
    expect(body).toEqual({
      ...vmRecord(minted!, {
        state: 'Provisioning' as never,
        started_at: null,
        tenant_id: 'acme',
      }),
      node_id: 'big',
    });
    expect(small1.calls).toHaveLength(0);
    expect(big.calls).toEqual([
      {
        method: 'POST',
        url: '/v1/spawn',
        body: {
          ...small,
          prefer_kvm: false,
          tenant_id: 'acme',
          vm_id: minted,
          // The fleet's copy defaults (VM_FLEET_COPIES, VM_FLEET_COPY_EVERY_S), resolved.
          copies: { count: 1, every_s: 60 },
          // The end of the controller's wait, by its clock: the agent refuses it after.
          deadline: toRfc3339(fleet.clock.wallNow() + AGENT_REQUEST_TIMEOUT_MS),
        },
      },
    ]);

    const node = await request(fleet.url).get('/v1/nodes/big').expect(200);
    expect(node.body).toMatchObject({ vm_count: 1, ram_available_mb: 65536 - 4096 - 1024 });
    const acme = await request(fleet.url).get('/v1/vms?tenant_id=acme').expect(200);
    expect(acme.body).toEqual([body]);

    // The next heartbeat replaces the record: the node now accounts for the VM itself.
    await enroll('big', big, {
      ram_total_mb: 65536,
      ram_used_mb: 5120,
      vms: [vmRecord(minted!, { tenant_id: 'acme', ram_alloc_mb: 1024 })],
    });
    const after = await request(fleet.url).get('/v1/nodes/big').expect(200);
    expect(after.body).toMatchObject({ vm_count: 1, ram_available_mb: 65536 - 5120 });
  });

  it('lists each VM with the accelerator its agent reported, null from an agent that does not say', async () => {
    const stub = await agent((call, res) => json(res, 201, spawned(call)));
    const older = vmRecord('vm-00000000000000c3');
    delete older.accel;
    await enroll('accel', stub, {
      vms: [
        vmRecord('vm-00000000000000c1', { accel: 'kvm' }),
        vmRecord('vm-00000000000000c2', { accel: 'tcg' }),
        older,
      ],
    });
    const { body } = await request(fleet.url).get('/v1/vms').expect(200);
    expect(
      (body as Array<{ vm_id: string; accel: unknown }>).map(({ vm_id, accel }) => [vm_id, accel]),
    ).toEqual([
      ['vm-00000000000000c1', 'kvm'],
      ['vm-00000000000000c2', 'tcg'],
      ['vm-00000000000000c3', null],
    ]);
  });

  it('refuses a heartbeat whose VM names another accelerator, naming the field', async () => {
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(
        heartbeat({
          node_id: 'odd',
          vms: [vmRecord('vm-00000000000000c4', { accel: 'hvf' as never })],
        }),
      )
      .expect(400)
      .expect((res) => expect(JSON.stringify(res.body)).toContain('accel'));
  });

  it('records the request tenant when the agent does not echo it', async () => {
    const quiet = await agent((call, res) =>
      json(res, 200, { ...spawned(call), tenant_id: undefined }),
    );
    await enroll('n1', quiet);
    const { body } = await create({ ...small, tenant_id: 'globex' }).expect(201);
    expect(body.tenant_id).toBe('globex');
    await request(fleet.url)
      .get('/v1/vms?tenant_id=globex')
      .expect(200)
      .expect((res) => expect(res.body).toHaveLength(1));
  });

  it('prefers a KVM node when asked, and honours preferred_node', async () => {
    const tcg = await agent((call, res) => json(res, 201, spawned(call)));
    const kvm = await agent((call, res) => json(res, 201, spawned(call)));
    await enroll('tcg', tcg, { ram_total_mb: 65536 });
    await enroll('kvm', kvm, { ram_total_mb: 8192, kvm_available: true });
    await create({ ...small, prefer_kvm: true }).expect(201);
    expect(kvm.calls).toHaveLength(1);
    await create({ ...small, preferred_node: 'kvm' }).expect(201);
    expect(kvm.calls).toHaveLength(2);
    await create(small).expect(201);
    expect(tcg.calls).toHaveLength(1);
  });

  it('answers 422 naming an unknown or too small preferred_node, and calls no agent', async () => {
    const stub = await agent((call, res) => json(res, 201, spawned(call)));
    await enroll('tiny', stub, { ram_total_mb: 2048, ram_used_mb: 1536 });
    await enroll('huge', stub, { ram_total_mb: 65536 });
    const unknown = await create({ ...small, preferred_node: 'ghost' }).expect(422);
    expect(unknown.body.message).toContain('ghost');
    const short = await create({ ...small, preferred_node: 'tiny' }).expect(422);
    expect(short.body.message).toContain('tiny');
    expect(stub.calls).toHaveLength(0);
  });

  it('answers 503 when no node has ram_mb + 512 MB free', async () => {
    const stub = await agent((call, res) => json(res, 201, spawned(call)));
    await enroll('n1', stub, { ram_total_mb: 4096, ram_used_mb: 2048 });
    await create({ ...small, ram_mb: 1536 }).expect(201);
    const { body } = await create({ ...small, ram_mb: 1 }).expect(503);
    expect(body.message).toContain('513 MB');
    await request(fleet.url).post('/v1/vms').send(small).expect(503);
    expect(stub.calls).toHaveLength(1);
  });

  it('answers 503 on an empty fleet', async () => {
    await create(small).expect(503);
  });

  it.each<[string, (call: StubAgentCall, res: ServerResponse) => void, RegExp, number]>([
    [
      'answers 500',
      (_call, res) => json(res, 500, { message: 'qemu exploded' }),
      /node n1 refused the VM: qemu exploded/,
      AGENT_REQUEST_TIMEOUT_MS,
    ],
    [
      'answers garbage',
      (_call, res) => json(res, 201, { hello: 'world' }),
      /^agent of node n1 answered unusably$/,
      AGENT_REQUEST_TIMEOUT_MS,
    ],
  ])(
    'answers 502 and records nothing when the agent %s',
    async (_what, respond, message, waitMs) => {
      waitForAgentsMs(waitMs);
      const stub = await agent(respond);
      await enroll('n1', stub);
      const { body } = await create(small).expect(502);
      expect(body.message).toMatch(message);
      expect(stub.calls).toHaveLength(1);
      await request(fleet.url).get('/v1/vms').expect(200, []);
      const node = await request(fleet.url).get('/v1/nodes/n1').expect(200);
      expect(node.body).toMatchObject({ vm_count: 0, ram_available_mb: 16384 - 4096 });
    },
  );

  it('answers 502 and keeps the RAM held when the agent never answers: it may still make the VM', async () => {
    waitForAgentsMs(300);
    const stub = await agent(() => undefined);
    await enroll('n1', stub);
    const { body } = await create(small).expect(502);
    expect(body.message).toBe('agent of node n1 could not be reached');
    expect(stub.calls).toHaveLength(1);
    await request(fleet.url).get('/v1/vms').expect(200, []);
    const node = await request(fleet.url).get('/v1/nodes/n1').expect(200);
    expect(node.body).toMatchObject({ vm_count: 0, ram_available_mb: 16384 - 4096 - 1024 });
  });

  it('answers 502 naming the node, and nothing of what is at its address, when its agent is unreachable', async () => {
    const gone = await agent(() => undefined);
    const port = gone.port;
    await gone.stop();
    await enroll('n1', { port });
    const { body } = await create(small).expect(502);
    expect(body.message).toBe('agent of node n1 could not be reached');
    await request(fleet.url).get('/v1/vms').expect(200, []);
  });

  it('does not over-commit a node when a burst of creates arrives at once', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = await agent(async (call, res) => {
      await gate;
      json(res, 201, spawned(call));
    });
    // 4096 MB free: the first 1024 MB VM needs 1536, leaves 3072; the second leaves 2048;
    // the third needs 1536 of 2048, leaves 1024; no fourth fits.
    await enroll('n1', slow, { ram_total_mb: 8192, ram_used_mb: 4096 });
    const answered: number[] = [];
    let threeRefused!: () => void;
    const refusals = new Promise<void>((resolve) => (threeRefused = resolve));
    const burst = Array.from({ length: 6 }, () =>
      create(small).then((res) => {
        answered.push(res.status);
        if (answered.length === 3) threeRefused();
        return res.status;
      }),
    );
    // While the agent holds its answers, only the refusals can come back.
    await refusals;
    expect(answered).toEqual([503, 503, 503]);
    release();
    const statuses = await Promise.all(burst);
    expect(statuses.sort()).toEqual([201, 201, 201, 503, 503, 503]);
    expect(slow.calls).toHaveLength(3);
    const node = await request(fleet.url).get('/v1/nodes/n1').expect(200);
    expect(node.body).toMatchObject({ vm_count: 3, ram_available_mb: 1024 });
  });

  describe('a node whose agent fails', () => {
    /** A node that heartbeats with the most free RAM, but nothing listens on its spawn port. */
    async function enrollSick(node_id = 'sick') {
      const gone = await agent(() => undefined);
      const port = gone.port;
      await gone.stop();
      await enroll(node_id, { port }, { ram_total_mb: 65536, ram_used_mb: 0 });
    }

    it('is passed over: the create goes on to the next best node with the same spawn key', async () => {
      await enrollSick();
      const healthy = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('ok', healthy);
      const first = await create(small).expect(201);
      expect(first.body.vm_id).toMatch(/^vm-/);
      expect(healthy.calls).toHaveLength(1);
      // In backoff now: the next creates go straight to the healthy node.
      await create(small).expect(201);
      await create(small).expect(201);
      expect(healthy.calls).toHaveLength(3);
      const vms = (await request(fleet.url).get('/v1/vms').expect(200)).body;
      expect(vms).toHaveLength(3);
    });

    it('tries at most 3 nodes, then answers 502 for the last one', async () => {
      for (const id of ['s1', 's2', 's3', 's4']) await enrollSick(id);
      const { body } = await create(small).expect(502);
      expect(body.message).toMatch(/^agent of node s\d could not be reached$/);
      // The fourth was never tried, and the three that were are named in the next refusal.
      const refused = await create(small).expect(502);
      expect(refused.body.message).toBe('agent of node s4 could not be reached');
      const none = await create(small).expect(503);
      for (const id of ['s1', 's2', 's3', 's4']) {
        expect(none.body.message).toMatch(
          new RegExp(`${id}: dispatch failed once in the last 40 s: unreachable \\(`),
        );
      }
    });

    it('is eligible again after its backoff, and clean after a successful dispatch', async () => {
      let up = false;
      const flaky = await agent((call, res) => {
        if (up) json(res, 201, spawned(call));
        else res.socket?.destroy();
      });
      await enroll('n1', flaky);
      await create(small).expect(502);
      const refused = await create(small).expect(503);
      expect(refused.body.message).toContain(
        'n1: dispatch failed once in the last 40 s: unreachable',
      );
      fleet.clock.advance(5_000);
      await enroll('n1', flaky);
      up = true;
      await create(small).expect(201);
      await create(small).expect(201);
      expect(flaky.calls).toHaveLength(3);
    });

    it('gives up on a spawn port that answers no SYN after the connect timeout, and tries the next node', async () => {
      fleet.app.get(VmHostClientSettings).connectTimeoutMs = 300;
      const silent = await unansweredPort();
      try {
        await enroll('firewalled', silent, { ram_total_mb: 65536, ram_used_mb: 0 });
        const healthy = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('ok', healthy);
        const started = performance.now();
        const { body } = await create(small).expect(201);
        const tookMs = performance.now() - started;
        expect(body.node_id).toBe('ok');
        // The connect timeout, not the request's 10 s: nothing reached that agent.
        expect(tookMs).toBeGreaterThanOrEqual(290);
        expect(tookMs).toBeLessThan(AGENT_REQUEST_TIMEOUT_MS / 2);
        expect(healthy.calls).toHaveLength(1);
        // Passed over for a while, its trouble named.
        const refused = await create({ ...small, ram_mb: 60_000 }).expect(503);
        expect(refused.body.message).toContain(
          'firewalled: dispatch failed once in the last 40 s: unreachable',
        );
      } finally {
        silent.close();
      }
    });

    it.each([
      ['never answers', () => undefined],
      [
        'resets the connection',
        (_call: StubAgentCall, res: ServerResponse) => {
          res.socket?.destroy();
        },
      ],
    ])(
      'answers 502 without trying another node when the agent %s: it may be making the VM',
      async (_what, respond) => {
        waitForAgentsMs(300);
        const cutOff = await agent(respond);
        await enroll('cut', cutOff, { ram_total_mb: 65536, ram_used_mb: 0 });
        const other = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('other', other);
        const { body } = await create(small).expect(502);
        expect(body.message).toBe('agent of node cut could not be reached');
        expect(other.calls).toHaveLength(0);
        // Passed over from now on: the next create goes to the other node.
        await create(small).expect(201);
        expect(other.calls).toHaveLength(1);
      },
    );

    it("passes an agent's refusal (422) of a preferred node on as it is, trying no other node", async () => {
      const full = await agent((_call, res) => json(res, 422, { message: 'no room for it here' }));
      await enroll('full', full, { ram_total_mb: 65536, ram_used_mb: 0 });
      const other = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('other', other);
      const { body } = await create({ ...small, preferred_node: 'full' }).expect(422);
      expect(body.message).toBe('node full refused the VM: no room for it here');
      expect(other.calls).toHaveLength(0);
      await create({ ...small, preferred_node: 'full' }).expect(422);
    });

    it.each([
      [507, 'disk full (507)', { message: 'VM_DISK_DIR /var/lib/vm-fleet is full (ENOSPC)' }],
      [422, 'refused the VM as too big (422)', { message: 'ram_mb: does not fit on this node' }],
      [
        422,
        'out of free host ports (422)',
        {
          message:
            'no free tcp host port for vm vm-00000000000000c1 on node refusing (10.0.0.1) in 32768-60999 (net.ipv4.ip_local_port_range): every port in it is bound; no VM was made',
        },
      ],
      [
        422,
        'no disk room for the VM (422)',
        {
          message:
            "disk_gb: 4.0 GiB does not fit in this node's disk room: 1.2 GiB committable of 9.2 GiB room in VM_DISK_DIR (reserve 0.5 GiB, 8.0 GiB committed to 2 other VM disk(s))",
        },
      ],
    ])(
      'moves a create on from an agent answering %i, and passes that node over for a while, naming why',
      async (status, reason, answer) => {
        // A node claiming the most RAM that refuses every VM: it must not take the fleet's creates.
        const refusing = await agent((_call, res) => json(res, status, answer));
        await enroll('refusing', refusing, { ram_total_mb: 1_000_000, ram_used_mb: 0 });
        const healthy = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('healthy', healthy);
        for (let i = 0; i < 5; i++) {
          const { body } = await create(small).expect(201);
          expect(body.node_id).toBe('healthy');
        }
        expect(refusing.calls).toHaveLength(1);
        expect(healthy.calls).toHaveLength(5);
        // The node is passed over, and a refusal says why.
        const { body } = await create({ ...small, ram_mb: 600_000 }).expect(503);
        expect(body.message).toContain(
          `refusing: dispatch failed once in the last 40 s: ${reason}`,
        );
      },
    );

    describe('disk_gb', () => {
      it('sends disk_gb to the agent, and the Idempotency-Key hashes it', async () => {
        const node = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('node', node);
        await create({ ...small, disk_gb: 20 }, 'disk-20').expect(201);
        expect((node.calls[0].body as { disk_gb: unknown }).disk_gb).toBe(20);
        // The same key with another disk is another request.
        await create({ ...small, disk_gb: 30 }, 'disk-20').expect(422);
      });

      it('refuses a disk_gb out of its bounds (400), naming it', async () => {
        for (const disk_gb of [0, 16_385, 1.5, '20']) {
          const { body } = await create({ ...small, disk_gb }).expect(400);
          expect(JSON.stringify(body.message)).toContain('disk_gb');
        }
      });

      it("passes an agent's disk_gb below its base image (422) on, trying no other node", async () => {
        const message =
          'disk_gb: 2 GiB is smaller than the base image (4.0 GiB); ask for at least 4';
        const smallImage = await agent((_call, res) => json(res, 422, { message }));
        await enroll('first', smallImage, { ram_total_mb: 65536, ram_used_mb: 0 });
        const other = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('other', other);
        const { body } = await create({ ...small, disk_gb: 2 }).expect(422);
        expect(body.message).toBe(`node first refused the VM: ${message}`);
        expect(other.calls).toHaveLength(0);
      });
    });

    describe('published ports', () => {
      const web = { ...small, ports: [{ guest_port: 80, protocol: 'tcp', host_port: 8080 }] };
      const held = vmRecord('vm-00000000000000b1', {
        host_ports: [
          { host_port: 40022, guest_port: 22, protocol: 'tcp' },
          { host_port: 8080, guest_port: 80, protocol: 'tcp' },
        ],
      });

      it('sends ports to the agent, and places a host_port only where no VM holds it', async () => {
        const holding = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('holding', holding, { ram_total_mb: 65536, ram_used_mb: 0, vms: [held] });
        const free = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('free', free);
        const { body } = await create(web).expect(201);
        expect(body.node_id).toBe('free');
        expect(holding.calls).toHaveLength(0);
        expect((free.calls[0].body as { ports: unknown }).ports).toEqual(web.ports);
      });

      it('refuses (422) naming the port when every node with room holds it, asking no agent', async () => {
        const holding = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('holding', holding, { vms: [held] });
        const { body } = await create(web).expect(422);
        expect(body.message).toBe(
          'every node with room holds a host_port this create asks for: holding: host_port 8080/tcp is held by vm vm-00000000000000b1; ask for another host_port, or none (a free one is then chosen)',
        );
        expect(holding.calls).toHaveLength(0);
      });

      it('moves on from an agent refusing the host_port (422) without passing that node over', async () => {
        // Its port 8080 taken by a process of its own: it refuses creates asking for it.
        const refusing = await agent((call, res) =>
          (call.body as { ports?: unknown }).ports
            ? json(res, 422, {
                message:
                  'ports[0].host_port: 8080/tcp on node refusing (10.0.0.1) is in use by another process; no VM was made',
              })
            : json(res, 201, spawned(call)),
        );
        await enroll('refusing', refusing, { ram_total_mb: 65536, ram_used_mb: 0 });
        const other = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('other', other);
        expect((await create(web).expect(201)).body.node_id).toBe('other');
        // Not the node's fault: a create without the port still goes to the roomiest node.
        expect((await create(small).expect(201)).body.node_id).toBe('refusing');
        // Alone, the agent's refusal is the answer, naming the port.
        const { body } = await create({ ...web, preferred_node: 'refusing' }).expect(422);
        expect(body.message).toBe(
          'node refusing refused the VM: ports[0].host_port: 8080/tcp on node refusing (10.0.0.1) is in use by another process; no VM was made',
        );
      });

      it('refuses (400) duplicate ports naming the entry, and SSH asked again', async () => {
        const stub = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('a', stub);
        const twice = await create({
          ...small,
          ports: [
            { guest_port: 80, protocol: 'tcp' },
            { guest_port: 80, protocol: 'tcp' },
          ],
        }).expect(400);
        expect(JSON.stringify(twice.body)).toContain(
          'ports[1].guest_port: 80/tcp is already asked for by ports[0]',
        );
        const ssh = await create({ ...small, ports: [{ guest_port: 22, protocol: 'tcp' }] }).expect(
          400,
        );
        expect(JSON.stringify(ssh.body)).toContain("22/tcp is the VM's SSH forward");
        expect(stub.calls).toHaveLength(0);
      });
    });

    it.each([
      ['without an Idempotency-Key', undefined, 'vm-00000000000000f1'],
      ['with a key of its own', 'order-4711-web', 'vm-00000000000000f2'],
    ])(
      "refuses a 'replay' (%s) answering another VM the node lists: never another tenant's VM",
      async (_what, key, victimId) => {
        const victim = vmRecord(victimId, { tenant_id: 'acme' });
        const replayer = await agent((_call, res) => json(res, 200, victim));
        await enroll('replayer', replayer, { vms: [victim] });
        const { body } = await create({ ...small, tenant_id: 'globex' }, key).expect(502);
        expect(body.message).toBe('agent of node replayer answered unusably');
        const vms = (await request(fleet.url).get('/v1/vms').expect(200)).body as Array<{
          vm_id: string;
          tenant_id: string | null;
        }>;
        expect(vms.map(({ vm_id, tenant_id }) => ({ vm_id, tenant_id }))).toEqual([
          { vm_id: victimId, tenant_id: 'acme' },
        ]);
      },
    );

    it('asks the next node with a vm id of its own: one a refusing node listed first cannot take the VM over', async () => {
      // A hostile node: lists the id it was sent in a heartbeat, then answers 507.
      const hostile = await agent(async (call, res) => {
        const { vm_id } = call.body as { vm_id: string };
        await enroll('hostile', hostile, {
          ram_total_mb: 1_000_000,
          ram_used_mb: 0,
          vms: [vmRecord(vm_id)],
        });
        json(res, 507, { message: 'VM_DISK_DIR /var/lib/vm-fleet is full (ENOSPC)' });
      });
      await enroll('hostile', hostile, { ram_total_mb: 1_000_000, ram_used_mb: 0 });
      const healthy = await agent((call, res) => {
        if (call.method === 'DELETE') res.writeHead(204).end();
        else json(res, 201, spawned(call));
      });
      await enroll('healthy', healthy);
      const { body } = await create(small).expect(201);
      expect(body.node_id).toBe('healthy');
      const [sentToHostile] = hostile.calls.map((call) => (call.body as { vm_id: string }).vm_id);
      const [sentToHealthy] = healthy.calls.map((call) => (call.body as { vm_id: string }).vm_id);
      expect(sentToHealthy).not.toBe(sentToHostile);
      expect(body.vm_id).toBe(sentToHealthy);
      // Its DELETE goes to the node that made it.
      await request(fleet.url).delete(`/v1/vms/${body.vm_id}`).expect(204);
      expect(healthy.calls.map(({ method }) => method)).toEqual(['POST', 'DELETE']);
    });

    it('names the trouble in one word whatever it was: unreachable for a timeout, failed for any status', async () => {
      waitForAgentsMs(300);
      const silent = await agent(() => undefined);
      await enroll('silent', silent, { ram_total_mb: 65536, ram_used_mb: 0 });
      const proxy = await agent((_call, res) => {
        res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad Gateway</h1>');
      });
      await enroll('proxied', proxy, { ram_total_mb: 32768, ram_used_mb: 0 });
      await create({ ...small, preferred_node: 'silent' }).expect(502);
      const answered = await create({ ...small, preferred_node: 'proxied' }).expect(502);
      expect(answered.body.message).toBe(
        'agent of node proxied answered 502 (no JSON error message)',
      );
      const { body } = await create(small).expect(503);
      expect(body.message).toContain(
        'silent: dispatch failed once in the last 40 s: unreachable (',
      );
      expect(body.message).toContain('proxied: dispatch failed once in the last 40 s: failed (');
    });

    it('stays passed over when a heartbeat names a new boot_id', async () => {
      await enrollSick();
      const healthy = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('ok', healthy);
      await create(small).expect(201);
      // Anyone with the node token can claim a fresh boot: that is no reason to try it again.
      await enroll('sick', { port: 1 }, { ram_total_mb: 65536, ram_used_mb: 0, boot_id: 'boot-9' });
      const { body } = await create({ ...small, preferred_node: 'sick' }).expect(422);
      expect(body.message).toMatch(/^preferred_node sick: dispatch failed once in the last 40 s/);
      await create(small).expect(201);
      expect(healthy.calls).toHaveLength(2);
    });

    it('asks no further node when placing it took the time left, and answers the last failure', async () => {
      fleet.app.get(VmCreateSettings).dispatchDeadlineMs = 1_500;
      const nodes = fleet.app.get(NodesRepository);
      const listLive = nodes.listLive.bind(nodes);
      let slowStore = false;
      jest.spyOn(nodes, 'listLive').mockImplementation(async (notBefore) => {
        // The store is slow from the first failure on: the next placement leaves < 1 s.
        if (slowStore) await new Promise((resolve) => setTimeout(resolve, 1_200));
        return listLive(notBefore);
      });
      const broken = await agent((_call, res) => {
        slowStore = true;
        json(res, 503, { message: 'no base image' });
      });
      await enroll('broken', broken, { ram_total_mb: 65536, ram_used_mb: 0 });
      const healthy = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('ok', healthy);
      const { body } = await create(small).expect(502);
      expect(body.message).toBe('agent of node broken answered 503: no base image');
      expect(healthy.calls).toHaveLength(0);
      // Neither marked nor holding RAM: the next create goes to it at once.
      slowStore = false;
      expect(await node('ok')).toMatchObject({ ram_available_mb: 16384 - 4096 });
      await create(small).expect(201);
      expect(healthy.calls).toHaveLength(1);
    });

    it('writes the store once for a successful create: hold, then the VM with the node cleared', async () => {
      let up = false;
      const flaky = await agent((call, res) => {
        if (up) json(res, 201, spawned(call));
        else res.socket?.destroy();
      });
      await enroll('n1', flaky);
      await create(small).expect(502);
      fleet.clock.advance(5_000);
      await enroll('n1', flaky);
      up = true;
      const nodes = fleet.app.get(NodesRepository);
      const update = jest.spyOn(nodes, 'update');
      await create(small).expect(201);
      expect(update).toHaveBeenCalledTimes(2);
      const { body } = await create({ ...small, ram_mb: 65536 }).expect(503);
      expect(body.message).not.toContain('dispatch failed');
    });

    it('keeps preferred_node to that node: 502, then 422 naming its trouble', async () => {
      await enrollSick();
      const healthy = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('ok', healthy);
      await create({ ...small, preferred_node: 'sick' }).expect(502);
      const { body } = await create({ ...small, preferred_node: 'sick' }).expect(422);
      expect(body.message).toMatch(/^preferred_node sick: dispatch failed once in the last 40 s/);
      expect(healthy.calls).toHaveLength(0);
    });
  });

  describe('placement explains a refusal', () => {
    it('answers 503 listing every live node and why it was passed over', async () => {
      const stub = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('compute-west-02', stub, { ram_total_mb: 8192, ram_used_mb: 5092 });
      await enroll('edge-01', stub, { ram_total_mb: 4096, ram_used_mb: 2048, reserved: true });
      const { body } = await create({ ...small, ram_mb: 4096 }).expect(503);
      expect(body.message).toBe(
        'no node has 4608 MB free (ram_mb 4096 + 512 MB margin); 2 live node(s) considered: ' +
          'compute-west-02: needs 4608 MB, has 3100 MB; edge-01: needs 4608 MB, has 2048 MB',
      );
      expect(stub.calls).toHaveLength(0);
    });

    it('answers 422 naming the preferred node and what it lacks', async () => {
      const stub = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('tiny', stub, { ram_total_mb: 4096, ram_used_mb: 3584 });
      const { body } = await create({ ...small, preferred_node: 'tiny' }).expect(422);
      expect(body.message).toBe('preferred_node tiny: needs 1024 MB, has 512 MB');
    });

    it('names ten nodes of a large fleet and counts the others', async () => {
      const stub = await agent((call, res) => json(res, 201, spawned(call)));
      for (let index = 0; index < 25; index++) {
        await enroll(`n-${String(index).padStart(2, '0')}`, stub, { ram_used_mb: 16000 });
      }
      const { body } = await create(small).expect(503);
      expect(body.message).toContain(
        '25 live node(s) considered: n-00: needs 1536 MB, has 384 MB;',
      );
      expect(body.message).toMatch(/n-09: needs 1536 MB, has 384 MB; and 15 more$/);
    });

    it('passes over a node that missed two heartbeats while a fresh one fits, and says so', async () => {
      const dying = await agent((call, res) => json(res, 201, spawned(call)));
      const fresh = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('dying', dying, { ram_total_mb: 65536 });
      fleet.clock.advance(10_000);
      await enroll('dying', dying, { ram_total_mb: 65536 });
      fleet.clock.advance(20_500);
      await enroll('fresh', fresh, { ram_total_mb: 4096, ram_used_mb: 1024 });

      // Still listed: it is not 30 s silent yet.
      expect(await node('dying')).toMatchObject({ ram_available_mb: 65536 - 4096 });
      await create(small).expect(201);
      expect(fresh.calls).toHaveLength(1);
      expect(dying.calls).toHaveLength(0);

      const { body } = await create({ ...small, ram_mb: 8192 }).expect(503);
      expect(body.message).toContain(
        'dying: missed 2 heartbeats (silent 20.5 s, beats every 10.0 s)',
      );
      expect(body.message).toContain('fresh: needs 8704 MB, has 2048 MB');
      const preferred = await create({ ...small, preferred_node: 'dying' }).expect(422);
      expect(preferred.body.message).toContain('preferred_node dying: missed 2 heartbeats');

      // Beating again makes it a candidate again.
      await enroll('dying', dying, { ram_total_mb: 65536 });
      await create(small).expect(201);
      expect(dying.calls).toHaveLength(1);
    });

    it('does not pass over a node that beat once more right after a create', async () => {
      const stub = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('n1', stub);
      fleet.clock.advance(10_000);
      await enroll('n1', stub);
      fleet.clock.advance(500); // the extra beat an agent sends after a create
      await enroll('n1', stub);
      fleet.clock.advance(10_000);
      await create(small).expect(201);
    });
  });

  describe('Idempotency-Key', () => {
    it('answers a retry with the same key and body 200 with the same VM, spawning once', async () => {
      const stub = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('n1', stub);
      const first = await create({ ...small, tenant_id: 'acme' }, 'order-42').expect(201);
      const retry = await create(
        { ...small, tenant_id: 'acme', prefer_kvm: false, preferred_node: null },
        'order-42',
      ).expect(200);
      expect(retry.body).toEqual(first.body);
      expect(stub.calls).toHaveLength(1);
    });

    it('sends the agent <sha256 of the key>.<sha256 of the canonical request>, never the key', async () => {
      const keys: Array<string | undefined> = [];
      const stub = await agent((call, res) => {
        keys.push(spawnKeyOf(res));
        json(res, 201, spawned(call));
      });
      await enroll('n1', stub);
      await create(small, 'order-42').expect(201);
      const canonical =
        '{"vm_type":"web","ram_mb":1024,"vcpu_count":1,"prefer_kvm":false,"preferred_node":null,"tenant_id":null}';
      expect(keys).toEqual([`${sha256('order-42')}.${sha256(canonical)}`]);

      // Creates without a key get one each, never the same: the agent makes two VMs.
      await create(small).expect(201);
      await create(small).expect(201);
      expect(keys[1]).toMatch(/^[0-9a-f]{64}\.[0-9a-f]{64}$/);
      expect(new Set(keys).size).toBe(3);
    });

    it('answers 422 naming the header when the key comes back with another body', async () => {
      const stub = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('n1', stub);
      await create(small, 'order-42').expect(201);
      const { body } = await create({ ...small, ram_mb: 2048 }, 'order-42').expect(422);
      expect(body.message).toContain('Idempotency-Key');
      expect(stub.calls).toHaveLength(1);
    });

    it('makes one VM of concurrent identical keyed creates, with one dispatch', async () => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let dispatched!: () => void;
      const reached = new Promise<void>((resolve) => (dispatched = resolve));
      const stub = await agent(async (call, res) => {
        dispatched();
        await gate;
        json(res, 201, spawned(call));
      });
      await enroll('n1', stub);
      const creates = Array.from({ length: 4 }, () => create(small, 'burst-1'));
      const sent = Promise.all(creates.map((pending) => pending.then((res) => res)));
      await reached;
      const mismatch = await create({ ...small, vcpu_count: 2 }, 'burst-1').expect(422);
      expect(mismatch.body.message).toContain('Idempotency-Key');
      release();
      const answers = await sent;
      expect(answers.map((res) => res.status).sort()).toEqual([200, 200, 200, 201]);
      expect(new Set(answers.map((res) => res.body.vm_id)).size).toBe(1);
      expect(stub.calls).toHaveLength(1);
    });

    it('answers 200 when the agent already had the VM for the key (a retry after a lost answer)', async () => {
      const stub = await agent((call, res) => json(res, 200, spawned(call)));
      await enroll('n1', stub);
      const { body } = await create(small, 'lost-answer').expect(200);
      expect(body.vm_id).toBe((stub.calls[0].body as { vm_id: string }).vm_id);
    });

    it('refuses a malformed key with 400 naming the header, and calls no agent', async () => {
      const stub = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('n1', stub);
      for (const key of ['has space', 'k'.repeat(129), 'slash/es', '']) {
        const { body } = await create(small, key).expect(400);
        expect(body.message).toContain('Idempotency-Key');
      }
      expect(stub.calls).toHaveLength(0);
    });

    it('never answers a retry after an in-memory restart with a VM only the agent knows of the key', async () => {
      let spawnKey: string | undefined;
      let made: VmRecord | undefined;
      // As an agent of ours answers: the VM its key made (200), else a new one.
      const stub = await agent((call, res) => {
        if (made && spawnKeyOf(res) === spawnKey) return json(res, 200, made);
        spawnKey = spawnKeyOf(res);
        made = spawned(call);
        json(res, 201, made);
      });
      await enroll('n1', stub);
      const first = await create(small, 'survives-restart').expect(201);
      expect(first.body).not.toHaveProperty('idempotency_key');

      // In memory, a restarted controller has no record of the key, and what a node answers
      // or lists for it is no record: its VM is not taken for the key's (one node: 502).
      await fleet.close();
      fleet = await startFleet();
      // The agent reports the VM without node_id: only the controller adds it.
      const { node_id: shownNode, ...reported } = first.body as { node_id: string };
      expect(shownNode).toBe('n1');
      await enroll('n1', stub, {
        ram_used_mb: 5120,
        vms: [{ ...reported, idempotency_key: spawnKey }],
      });
      const retry = await create(small, 'survives-restart').expect(502);
      expect(retry.body.message).toBe('agent of node n1 answered unusably');
      expect(stub.calls).toHaveLength(2);
      const { body: listed } = await request(fleet.url).get('/v1/vms').expect(200);
      expect(listed).toEqual([first.body]);
      expect(JSON.stringify(listed)).not.toContain(spawnKey);
    });

    describe('held by another controller (its claim on the key, in the shared store)', () => {
      const spawnKey = spawnKeyFor({ ...small, prefer_kvm: false }, 'shared-key');
      const keyHash = spawnKey.split('.')[0];
      const claim = async (forSpawnKey: string, holdMs: number): Promise<OwnKeyClaim> => {
        const taken = await fleet.app.get(KeyClaims).claim(keyHash, forSpawnKey, holdMs);
        if (taken.kind !== 'own') throw new Error('claim not taken');
        return taken;
      };

      it('answers the VM the holder made, with no dispatch of its own', async () => {
        const stub = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('n1', stub);
        const held = await claim(spawnKey, 60_000);
        const waiting = create(small, 'shared-key').then((res) => res);
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(stub.calls).toHaveLength(0);
        // The holder's agent made the VM and reports it; the holder records it, then ends its claim.
        await enroll('n1', stub, {
          vms: [{ ...vmRecord('vm-00000000000000b7'), idempotency_key: spawnKey }],
        });
        await fleet.app
          .get(KeyClaims)
          .recordDispatch(
            keyHash,
            { spawnKey, nodeId: 'n1', vmId: 'vm-00000000000000b7' },
            IDEMPOTENCY_KEY_TTL_MS,
          );
        await fleet.app.get(KeyClaims).release(held);
        const { status, body } = await waiting;
        expect([status, body.vm_id, body.node_id]).toEqual([200, 'vm-00000000000000b7', 'n1']);
        expect(stub.calls).toHaveLength(0);
      });

      it('takes over at the deadline of a claim its holder left (died), and makes the VM', async () => {
        const stub = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('n1', stub);
        await claim(spawnKey, 300);
        const started = performance.now();
        await create(small, 'shared-key').expect(201);
        expect(performance.now() - started).toBeGreaterThanOrEqual(250);
        expect(stub.calls).toHaveLength(1);
      });

      it('answers 503 naming the header when the holder is still at it after the longest wait', async () => {
        const stub = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('n1', stub);
        fleet.app.get(VmCreateSettings).keyClaimWaitMs = 600;
        // A claim the store keeps with no expiry (Redis PTTL -1): looked at again after a
        // pause, never in a busy loop, and given up on at the deadline.
        const claims = fleet.app.get(KeyClaims);
        const looks = jest
          .spyOn(claims, 'claim')
          .mockResolvedValue({ kind: 'others', spawnKey, expiresInMs: -1 });
        const started = performance.now();
        const { body } = await create(small, 'shared-key').expect(503);
        expect(performance.now() - started).toBeGreaterThanOrEqual(550);
        expect(body.message).toBe(
          'a create with this Idempotency-Key is still in progress on another controller; retry with the same key',
        );
        expect(looks.mock.calls.length).toBeLessThan(15);
        expect(stub.calls).toHaveLength(0);
      });

      it('refuses with 422 a create whose key is held for another body', async () => {
        const stub = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('n1', stub);
        await claim(`${keyHash}.${'0'.repeat(64)}`, 60_000);
        const { body } = await create(small, 'shared-key').expect(422);
        expect(body.message).toContain('Idempotency-Key');
        expect(stub.calls).toHaveLength(0);
      });
    });

    it('makes a new VM once the VM its key made is gone', async () => {
      const stub = await agent((call, res) =>
        call.method === 'DELETE' ? json(res, 204) : json(res, 201, spawned(call)),
      );
      await enroll('n1', stub);
      const first = await create(small, 'deleted-since').expect(201);
      await request(fleet.url).delete(`/v1/vms/${first.body.vm_id}`).expect(204);
      const again = await create(small, 'deleted-since').expect(201);
      expect(again.body.vm_id).not.toBe(first.body.vm_id);
    });

    it('answers a retry with the VM a timed-out dispatch made, once its node lists it: no second VM', async () => {
      waitForAgentsMs(300);
      const stub = await agent(() => undefined); // frozen: never answers
      const other = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('frozen', stub, { ram_total_mb: 65536, ram_used_mb: 0 });
      await enroll('other', other);
      await create(small, 'frozen-1').expect(502);
      // The agent made it after all, under the id it was sent, and its heartbeat lists it.
      const sent = stub.calls[0].body as { vm_id: string };
      await enroll('frozen', stub, {
        ram_total_mb: 65536,
        ram_used_mb: 1536,
        vms: [vmRecord(sent.vm_id, { ram_alloc_mb: 1024 })],
      });
      const { body } = await create(small, 'frozen-1').expect(200);
      expect([body.vm_id, body.node_id]).toEqual([sent.vm_id, 'frozen']);
      expect(stub.calls).toHaveLength(1);
      expect(other.calls).toHaveLength(0);
    });

    it("never answers a client's key with a VM a node merely reports with it (squatting)", async () => {
      // node-a reports a VM keyed with the hash of a guessable key and of the body.
      const squatter = await agent((call, res) => json(res, 201, spawned(call)));
      const honest = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('node-a', squatter, {
        ram_total_mb: 4096,
        ram_used_mb: 3072,
        vms: [
          {
            ...vmRecord('vm-5a77e40000000001'),
            idempotency_key: spawnKeyFor({ ...small, prefer_kvm: false }, 'order-4711-web'),
          },
        ],
      });
      await enroll('node-b', honest, { ram_total_mb: 65536, ram_used_mb: 0 });
      const { status, body } = await create(small, 'order-4711-web');
      expect(status).toBe(201);
      expect(body.vm_id).not.toBe('vm-5a77e40000000001');
      expect(body.node_id).toBe('node-b');
      // The retry answers the VM the controller dispatched, not the squatter's.
      const retry = await create(small, 'order-4711-web').expect(200);
      expect(retry.body).toEqual(body);
      expect(honest.calls).toHaveLength(1);
      expect(squatter.calls).toHaveLength(0);
    });
    it('never answers a fresh key with a VM a node pre-listed for it and answers a spawn with (squatting)', async () => {
      const squatKey = spawnKeyFor({ ...small, prefer_kvm: false }, 'order-K2');
      const premade = { ...vmRecord('vm-5a77e40000000002'), idempotency_key: squatKey };
      // node-a lists a VM keyed for order-K2 and answers any spawn naming that key with it.
      const squatter = await agent((_call, res) => {
        const { idempotency_key: _key, ...vm } = premade;
        json(res, 200, vm);
      });
      const honest = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('node-a', squatter, { ram_total_mb: 65536, ram_used_mb: 1024, vms: [premade] });
      await enroll('node-b', honest, { ram_total_mb: 16384, ram_used_mb: 0 });
      const { status, body } = await create(small, 'order-K2');
      // Placement asked node-a first; its answer is refused and node-b makes a new VM.
      expect(squatter.calls).toHaveLength(1);
      expect([status, body.node_id]).toEqual([201, 'node-b']);
      expect(body.vm_id).toBe((honest.calls[0].body as { vm_id: string }).vm_id);
      // The key now answers the VM the controller dispatched.
      const retry = await create(small, 'order-K2').expect(200);
      expect(retry.body).toEqual(body);
      expect(honest.calls).toHaveLength(1);
    });

    describe('a dispatch its agent never answered (frozen)', () => {
      const frozenFor = async () => {
        waitForAgentsMs(300);
        const frozen = await agent(() => undefined); // never answers
        const other = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('frozen', frozen, { ram_total_mb: 65536, ram_used_mb: 0 });
        await enroll('other', other);
        await create(small, 'frozen-1').expect(502);
        return { frozen, other };
      };
      /** When the first dispatch resolves: its spawn's deadline, plus the agent's clock's margin. */
      const UNRESOLVED_MS = 300 + SPAWN_DEADLINE_SKEW_MS;

      it('sends the spawn a deadline the agent judges by, and asks no other node before it has passed', async () => {
        const { frozen, other } = await frozenFor();
        const sent = frozen.calls[0].body as { deadline: string };
        expect(sent.deadline).toBe(toRfc3339(fleet.clock.wallNow() + 300));
        // The node still beats: the retry asks it again, with the same id and key.
        fleet.clock.advance(UNRESOLVED_MS - 1);
        await enroll('frozen', frozen, { ram_total_mb: 65536, ram_used_mb: 0 });
        await enroll('other', other);
        await create(small, 'frozen-1').expect(502);
        expect(frozen.calls).toHaveLength(2);
        expect((frozen.calls[1].body as { vm_id: string }).vm_id).toBe(
          (frozen.calls[0].body as { vm_id: string }).vm_id,
        );
        expect(other.calls).toHaveLength(0);
      });

      it('answers 503 with when to retry while its node is silent, then places anew once it has passed', async () => {
        waitForAgentsMs(300);
        const frozen = await agent(() => undefined); // never answers
        const other = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('frozen', frozen, { ram_total_mb: 65536, ram_used_mb: 0 });
        // Its last beat 25 s before the create: it drops out before its dispatch resolves.
        fleet.clock.advance(25_000);
        await enroll('other', other);
        await create(small, 'frozen-1').expect(502);
        const silentAfterMs = NODE_STALE_AFTER_MS - 25_000 + 1;
        fleet.clock.advance(silentAfterMs);
        await enroll('other', other);
        const { body } = await create(small, 'frozen-1').expect(503);
        const leftS = Math.ceil((UNRESOLVED_MS - silentAfterMs) / 1000);
        expect(body.message).toBe(
          `the first dispatch of this Idempotency-Key, to node frozen, is unanswered and that node is silent: it may still make the VM until its deadline; retry with the same key in ${leftS} s`,
        );
        expect(other.calls).toHaveLength(0);
        // Past it, the agent refuses the spawn by its deadline: a new VM elsewhere.
        fleet.clock.advance(leftS * 1000);
        await enroll('other', other);
        const made = await create(small, 'frozen-1').expect(201);
        expect(made.body.node_id).toBe('other');
        expect(frozen.calls).toHaveLength(1);
        await create(small, 'frozen-1').expect(200);
      });

      it('places anew at once when the agent refused the spawn: it made nothing', async () => {
        const refusing = await agent((_call, res) =>
          json(res, 409, { statusCode: 409, error: 'Conflict', message: 'deadline passed' }),
        );
        const other = await agent((call, res) => json(res, 201, spawned(call)));
        await enroll('refusing', refusing, { ram_total_mb: 65536, ram_used_mb: 0 });
        await enroll('other', other);
        const { body } = await create(small, 'refused-1').expect(201);
        expect(body.node_id).toBe('other');
        expect(refusing.calls).toHaveLength(1);
      });
    });
  });

  describe('RAM holds end', () => {
    it('holds a placed VM until a heartbeat lists it, not merely until the next heartbeat', async () => {
      const stub = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('n1', stub, { ram_total_mb: 8192, ram_used_mb: 2048 });
      const { body } = await create({ ...small, ram_mb: 2048 }).expect(201);
      expect(await node('n1')).toMatchObject({ ram_available_mb: 4096 });
      // A heartbeat sampled before the spawn: the node's figures do not count the VM yet.
      await enroll('n1', stub, { ram_total_mb: 8192, ram_used_mb: 2048 });
      expect(await node('n1')).toMatchObject({ ram_available_mb: 4096 });
      await enroll('n1', stub, {
        ram_total_mb: 8192,
        ram_used_mb: 4096,
        vms: [vmRecord(body.vm_id, { ram_alloc_mb: 2048 })],
      });
      expect(await node('n1')).toMatchObject({ ram_available_mb: 4096, vm_count: 1 });
      await enroll('n1', stub, { ram_total_mb: 8192, ram_used_mb: 2048 });
      expect(await node('n1')).toMatchObject({ ram_available_mb: 6144 });
    });

    it('ends a hold left by a controller that died mid-dispatch at its deadline', async () => {
      const stub = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('n1', stub, { ram_total_mb: 8192, ram_used_mb: 2048 });
      // What a controller that died mid-dispatch leaves: a hold nobody will release.
      const now = fleet.clock.now();
      await fleet.app.get(NodesRepository).update(
        'n1',
        holdRam(
          {
            holdId: 'orphan',
            ramMb: 4096,
            requiredFreeMb: 0,
            nowMs: now,
            expiresAtMs: now + HOLD_LIFETIME_MS,
            spawnKey: `${'0'.repeat(64)}.${'1'.repeat(64)}`,
          },
          liveSince(now),
        ),
      );
      expect(await node('n1')).toMatchObject({ ram_available_mb: 2048 });
      const refused = await create({ ...small, ram_mb: 4096 }).expect(503);
      expect(refused.body.message).toContain('n1: needs 4608 MB, has 2048 MB');

      fleet.clock.advance(HOLD_LIFETIME_MS - 1);
      await create({ ...small, ram_mb: 4096 }).expect(503);
      fleet.clock.advance(1);
      // The sweep (every second, real time) gives it back in the listing...
      await eventually(
        'the listing to show the RAM given back',
        async () => ((await node('n1')).ram_available_mb === 6144 ? true : undefined),
        10_000,
      );
      // ...and placement counts it free at once.
      await create({ ...small, ram_mb: 4096 }).expect(201);
      expect(stub.calls).toHaveLength(1);
    });

    it('answers 201 with the VM when its record cannot be written, and the next heartbeat records it', async () => {
      const repository = fleet.app.get(NodesRepository);
      let spawnKey: string | undefined;
      const stub = await agent((call, res) => {
        spawnKey = spawnKeyOf(res);
        // The store goes away between the agent's answer and the record.
        jest
          .spyOn(repository, 'update')
          .mockRejectedValue(new StoreUnavailableError('fleet state store unavailable'));
        json(res, 201, spawned(call));
      });
      await enroll('n1', stub, { ram_total_mb: 8192, ram_used_mb: 2048 });
      const { body } = await create({ ...small, ram_mb: 2048 }).expect(201);
      expect(body.vm_id).toBe((stub.calls[0].body as { vm_id: string }).vm_id);
      jest.restoreAllMocks();

      // Not recorded, but its RAM is still held until the node lists it.
      await request(fleet.url).get('/v1/vms').expect(200, []);
      expect(await node('n1')).toMatchObject({ ram_available_mb: 4096 });
      // The agent reports the VM with the key it was spawned with: that ends the hold.
      await enroll('n1', stub, {
        ram_total_mb: 8192,
        ram_used_mb: 4096,
        vms: [{ ...body, idempotency_key: spawnKey }],
      });
      await request(fleet.url).get('/v1/vms').expect(200, [body]);
      expect(await node('n1')).toMatchObject({ ram_available_mb: 4096, vm_count: 1 });
    });
  });

  describe("the agent's refusals", () => {
    it.each<[number, number]>([
      [422, 422],
      [507, 507],
      [500, 502],
    ])('passes on an agent %i as %i with its reason, and gives the RAM back', async (from, to) => {
      const reason =
        from === 422
          ? 'ram_mb: 1048576 MB does not fit on this node: 20480 MB committable of 24576 MB (margin 512 MB)'
          : 'VM_DISK_DIR /var/lib/vm-fleet: no space left on device (ENOSPC)';
      const stub = await agent((_call, res) =>
        json(res, from, { statusCode: from, message: reason }),
      );
      await enroll('n1', stub, { ram_total_mb: 8192, ram_used_mb: 2048 });
      const { body } = await create(small).expect(to);
      expect(body).toEqual({
        statusCode: to,
        error: expect.any(String),
        message: `node n1 refused the VM: ${reason}`,
      });
      expect(await node('n1')).toMatchObject({ ram_available_mb: 6144, vm_count: 0 });
    });

    it('strips control characters from the reason and shortens it to 200 characters', async () => {
      const stub = await agent((_call, res) =>
        json(res, 422, { message: `vcpu_count:\u001b[31m\r\n too many ${'x'.repeat(1000)}` }),
      );
      await enroll('n1', stub);
      const { body } = await create(small).expect(422);
      const relayed = body.message.slice('node n1 refused the VM: '.length);
      expect(relayed.startsWith('vcpu_count:[31m too many xxx')).toBe(true);
      expect(Array.from(relayed as string)).toHaveLength(200);
      // eslint-disable-next-line no-control-regex -- asserting there are none
      expect(body.message).not.toMatch(/[\u0000-\u001f]/);
    });
  });

  describe('DELETE /v1/vms/:vm_id', () => {
    it('tells the owning agent and answers 204; the VM leaves the listing', async () => {
      const owner = await agent((_call, res) => {
        res.writeHead(204).end();
      });
      const other = await agent((_call, res) => json(res, 500));
      await enroll('owner', owner, { vms: [vmRecord('vm-1'), vmRecord('vm-2')] });
      await enroll('other', other, { vms: [vmRecord('vm-3')] });
      await request(fleet.url).delete('/v1/vms/vm-1').expect(204);
      expect(owner.calls).toEqual([{ method: 'DELETE', url: '/v1/vms/vm-1', body: undefined }]);
      expect(other.calls).toHaveLength(0);
      const { body } = await request(fleet.url).get('/v1/vms').expect(200);
      expect(body.map((vm: { vm_id: string }) => vm.vm_id).sort()).toEqual(['vm-2', 'vm-3']);
    });

    it('answers 204 when the agent says it has no such VM', async () => {
      const owner = await agent((_call, res) => json(res, 404, { message: 'unknown' }));
      await enroll('owner', owner, { vms: [vmRecord('vm-1')] });
      await request(fleet.url).delete('/v1/vms/vm-1').expect(204);
      await request(fleet.url).get('/v1/vms').expect(200, []);
    });

    it('answers 404 naming an unknown VM, and calls no agent', async () => {
      const owner = await agent((_call, res) => json(res, 204));
      await enroll('owner', owner, { vms: [vmRecord('vm-1')] });
      const { body } = await request(fleet.url).delete('/v1/vms/vm-404').expect(404);
      expect(body.message).toContain('vm-404');
      expect(owner.calls).toHaveLength(0);
    });

    it.each<[string, (call: StubAgentCall, res: ServerResponse) => void, number]>([
      ['fails', (_call, res) => json(res, 500), AGENT_REQUEST_TIMEOUT_MS],
      ['never answers', () => undefined, 300],
    ])('answers 502 and keeps the record when the agent %s', async (_what, respond, waitMs) => {
      waitForAgentsMs(waitMs);
      const owner = await agent(respond);
      await enroll('owner', owner, { vms: [vmRecord('vm-1')] });
      const { body } = await request(fleet.url).delete('/v1/vms/vm-1').expect(502);
      expect(body.message).toContain('owner');
      const vms = await request(fleet.url).get('/v1/vms').expect(200);
      expect(vms.body.map((vm: { vm_id: string }) => vm.vm_id)).toEqual(['vm-1']);
    });

    it('answers 502 and keeps the record when the agent is unreachable', async () => {
      const gone = await agent(() => undefined);
      const port = gone.port;
      await gone.stop();
      await enroll('owner', { port }, { vms: [vmRecord('vm-1')] });
      await request(fleet.url).delete('/v1/vms/vm-1').expect(502);
      await request(fleet.url)
        .get('/v1/vms')
        .expect(200)
        .expect((res) => expect(res.body).toHaveLength(1));
    });
  });

  describe('a node that drops out while its VMs may run (its agent stopped)', () => {
    const silentFor = NODE_STALE_AFTER_MS + 1;
    const ids = (vms: Array<{ vm_id: string }>) => vms.map((vm) => vm.vm_id).sort();
    const sweep = () => fleet.app.get(NodesService).dropStaleNodes();

    it.each([
      ['before the sweep', false],
      ['after the sweep', true],
    ])(
      'keeps listing its VMs with their node and since when it is silent (%s), never the node itself',
      async (_when, swept) => {
        const quiet = await agent((_call, res) => json(res, 204));
        const live = await agent((_call, res) => json(res, 204));
        await enroll('quiet', quiet, {
          vms: [vmRecord('vm-q1', { tenant_id: 'acme' }), vmRecord('vm-q2')],
        });
        const lastHeartbeat = new Date(fleet.clock.wallNow()).toISOString();
        fleet.clock.advance(silentFor);
        await enroll('live', live, { vms: [vmRecord('vm-l1')] });
        if (swept) await sweep();

        const { body } = await request(fleet.url).get('/v1/vms').expect(200);
        expect(ids(body)).toEqual(['vm-l1', 'vm-q1', 'vm-q2']);
        const quietVm = body.find((vm: { vm_id: string }) => vm.vm_id === 'vm-q1');
        expect(quietVm).toEqual({
          ...vmRecord('vm-q1', { tenant_id: 'acme' }),
          node_id: 'quiet',
          node_silent_since: lastHeartbeat,
        });
        const liveVm = body.find((vm: { vm_id: string }) => vm.vm_id === 'vm-l1');
        expect(liveVm).not.toHaveProperty('node_silent_since');
        const acme = await request(fleet.url).get('/v1/vms?tenant_id=acme').expect(200);
        expect(ids(acme.body)).toEqual(['vm-q1']);

        // The node itself is gone from every node listing, and from placement.
        await request(fleet.url).get('/v1/nodes/quiet').expect(404);
        const nodes = await request(fleet.url).get('/v1/nodes').expect(200);
        expect(nodes.body.map((n: { node_id: string }) => n.node_id)).toEqual(['live']);
        const fleetStatus = await request(fleet.url).get('/v1/fleet').expect(200);
        expect(fleetStatus.body.nodes).toHaveLength(1);
        const refused = await create({ ...small, preferred_node: 'quiet' }).expect(422);
        expect(refused.body.message).toContain('quiet');
        expect(quiet.calls).toHaveLength(0);
      },
    );

    it('answers a DELETE 409 saying what to do, and deletes through the agent once it heartbeats again', async () => {
      const quiet = await agent((_call, res) => {
        res.writeHead(204).end();
      });
      await enroll('quiet', quiet, { vms: [vmRecord('vm-q1'), vmRecord('vm-q2')] });
      const lastHeartbeat = new Date(fleet.clock.wallNow()).toISOString();
      fleet.clock.advance(40_000);
      await sweep();

      const { body } = await request(fleet.url).delete('/v1/vms/vm-q1').expect(409);
      expect(body.message).toBe(
        `vm vm-q1 is on node quiet, silent since ${lastHeartbeat} (40 s): no agent can destroy it, and its QEMU may still run. Start the node's agent again with the same VM_NODE_ID and VM_DISK_DIR, then delete again; if the machine is gone for good, DELETE /v1/vms/vm-q1?forget=true forgets the record (stopping nothing)`,
      );
      expect(quiet.calls).toHaveLength(0);
      expect(ids((await request(fleet.url).get('/v1/vms').expect(200)).body)).toEqual([
        'vm-q1',
        'vm-q2',
      ]);

      // Its agent is back: its heartbeat replaces what was kept, and a delete reaches it.
      await enroll('quiet', quiet, { vms: [vmRecord('vm-q1'), vmRecord('vm-q2')] });
      const back = await request(fleet.url).get('/v1/vms').expect(200);
      expect(back.body).toEqual([
        { ...vmRecord('vm-q1'), node_id: 'quiet' },
        { ...vmRecord('vm-q2'), node_id: 'quiet' },
      ]);
      await request(fleet.url).delete('/v1/vms/vm-q1').expect(204);
      expect(quiet.calls).toEqual([{ method: 'DELETE', url: '/v1/vms/vm-q1', body: undefined }]);
      expect(ids((await request(fleet.url).get('/v1/vms').expect(200)).body)).toEqual(['vm-q2']);
    });

    describe('whose id heartbeats again without listing some of its VMs', () => {
      // Another machine (a cloned VM_NODE_ID, or the agent on another VM_DISK_DIR).
      // (Its wg_ip is the same loopback address: the stub agents listen there.)
      const clone = { hostname: 'clone', boot_id: 'boot-clone' };

      it('keeps listing those VMs as silent, out of the node and of placement, and forgets them on request', async () => {
        const quiet = await agent((_call, res) => json(res, 204));
        await enroll('quiet', quiet, {
          vms: [vmRecord('vm-q1', { ram_alloc_mb: 4096 }), vmRecord('vm-q2')],
          ram_total_mb: 8192,
          ram_used_mb: 5120,
        });
        const lastHeartbeat = new Date(fleet.clock.wallNow()).toISOString();
        fleet.clock.advance(silentFor);
        await sweep();
        const warnings = jest.spyOn(Logger.prototype, 'warn');
        const clonesVm = vmRecord('vm-c1');
        await enroll('quiet', quiet, {
          ...clone,
          vms: [clonesVm],
          ram_total_mb: 8192,
          ram_used_mb: 512,
        });
        expect(warnings.mock.calls.map(([line]) => String(line))).toContainEqual(
          expect.stringMatching(
            /node quiet: 127\.0\.0\.1 \(host clone, boot boot-clone\) heartbeats for it and does not list 2 VM\(s\) \(vm-q1, vm-q2\) that 127\.0\.0\.1 \(host host-quiet, boot .+\) listed before the node went silent/,
          ),
        );
        warnings.mockRestore();

        const { body } = await request(fleet.url).get('/v1/vms').expect(200);
        expect(body).toEqual([
          { ...vmRecord('vm-c1'), node_id: 'quiet' },
          {
            ...vmRecord('vm-q1', { ram_alloc_mb: 4096 }),
            node_id: 'quiet',
            node_silent_since: lastHeartbeat,
          },
          { ...vmRecord('vm-q2'), node_id: 'quiet', node_silent_since: lastHeartbeat },
        ]);
        // The node's own figures are the clone's: one VM, its RAM.
        expect(await node('quiet')).toMatchObject({ vm_count: 1, ram_available_mb: 7680 });

        // No agent destroys them: 409 naming the agent that listed them.
        const refused = await request(fleet.url).delete('/v1/vms/vm-q1').expect(409);
        expect(refused.body.message).toContain(
          'vm vm-q1 was listed on node quiet by the agent at 127.0.0.1 (host host-quiet',
        );
        // Its later beats keep them listed; forgotten on request, one by one.
        await enroll('quiet', quiet, { ...clone, vms: [clonesVm], ram_used_mb: 512 });
        await request(fleet.url).delete('/v1/vms/vm-q1?forget=true').expect(204);
        await request(fleet.url).delete('/v1/vms/vm-q1?forget=true').expect(404);
        expect(ids((await request(fleet.url).get('/v1/vms').expect(200)).body)).toEqual([
          'vm-c1',
          'vm-q2',
        ]);
        // A heartbeat listing it again ends its silence: listed once, deleted by the agent.
        await enroll('quiet', quiet, { ...clone, vms: [clonesVm, vmRecord('vm-q2')] });
        const again = await request(fleet.url).get('/v1/vms').expect(200);
        expect(again.body).toEqual([
          { ...vmRecord('vm-c1'), node_id: 'quiet' },
          { ...vmRecord('vm-q2'), node_id: 'quiet' },
        ]);
        await request(fleet.url).delete('/v1/vms/vm-q2').expect(204);
        expect(quiet.calls).toEqual([{ method: 'DELETE', url: '/v1/vms/vm-q2', body: undefined }]);
      });

      it("keeps a silent node's VM its own when another node lists its id: still silent, still counted, still forgettable", async () => {
        const quiet = await agent((_call, res) => json(res, 204));
        const other = await agent((_call, res) => json(res, 204));
        await enroll('quiet', quiet, { vms: [vmRecord('vm-q1'), vmRecord('vm-q2')] });
        const before = await request(fleet.url).get('/v1/vms').expect(200);
        fleet.clock.advance(silentFor);
        await sweep();
        const silent = (await request(fleet.url).get('/v1/vms').expect(200)).body;
        await enroll('other', other, { vms: [vmRecord('vm-q1'), vmRecord('vm-o1')] });
        const { body } = await request(fleet.url).get('/v1/vms').expect(200);
        expect(body).toEqual([{ ...vmRecord('vm-o1'), node_id: 'other' }, ...silent]);
        expect(silent.map((vm: { node_silent_since?: string }) => vm.node_silent_since)).toEqual(
          before.body.map(() => expect.any(String)),
        );
        expect(await node('other')).toMatchObject({ vm_count: 1 });
        // Forgetting it still works on the node it belongs to, and no agent is asked.
        await request(fleet.url).delete('/v1/vms/vm-q1?forget=true').expect(204);
        expect([...quiet.calls, ...other.calls]).toEqual([]);
      });
    });

    describe("a heartbeat listing another node's VM id", () => {
      it('changes nothing the owner sees: listed once, on its node, and its DELETE goes to that agent', async () => {
        const nodeC = await agent((_call, res) => void res.writeHead(204).end());
        const nodeA = await agent((_call, res) => void res.writeHead(204).end());
        const victim = vmRecord('vm-d8d4000000000001', { tenant_id: 'victim' });
        await enroll('node-c', nodeC, { vms: [victim] });
        const seen = (await request(fleet.url).get('/v1/vms').expect(200)).body;
        const warnings = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
        for (let beat = 0; beat < 3; beat++) {
          await enroll('node-a', nodeA, { vms: [victim, vmRecord('vm-a000000000000001')] });
        }
        const conflictLines = warnings.mock.calls
          .map(([line]) => String(line))
          .filter((line) => line.includes('vm-d8d4000000000001'));
        warnings.mockRestore();
        // Warned once for the episode, naming both nodes.
        expect(conflictLines).toHaveLength(1);
        expect(conflictLines[0]).toContain('node node-a');
        expect(conflictLines[0]).toContain('which node node-c holds');
        const { body } = await request(fleet.url).get('/v1/vms?tenant_id=victim').expect(200);
        expect(body).toEqual(seen);
        expect(await node('node-a')).toMatchObject({ vm_count: 1 });
        expect(await node('node-c')).toMatchObject({ vm_count: 1 });
        await request(fleet.url).delete('/v1/vms/vm-d8d4000000000001').expect(204);
        expect(nodeC.calls).toEqual([
          { method: 'DELETE', url: '/v1/vms/vm-d8d4000000000001', body: undefined },
        ]);
        expect(nodeA.calls).toEqual([]);
      });
    });

    describe('the id in a spawn reply', () => {
      it.each([
        ['an id of its own (an agent that mints its ids)', () => 'vm-0000000000000bad'],
        ["another node's VM", () => 'vm-6a98000000000001'],
      ])(
        'refuses a reply naming %s: 502, nothing recorded, RAM given back, node backed off',
        async (_what, id) => {
          const victimNode = await agent((_call, res) => void res.writeHead(204).end());
          await enroll('node-b', victimNode, {
            ram_total_mb: 2048,
            ram_used_mb: 1024,
            vms: [vmRecord('vm-6a98000000000001', { tenant_id: 'victim' })],
          });
          const hostile = await agent((call, res) => json(res, 201, spawned(call, id())));
          await enroll('node-a', hostile, { ram_total_mb: 16384, ram_used_mb: 0 });
          const listedBefore = (await request(fleet.url).get('/v1/vms').expect(200)).body;
          const warnings = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
          const { body } = await create({ ...small, tenant_id: 'tenant2' }).expect(502);
          const lines = warnings.mock.calls.map(([line]) => String(line));
          warnings.mockRestore();
          expect(body.message).toBe('agent of node node-a answered unusably');
          const asked = (hostile.calls[0].body as { vm_id: string }).vm_id;
          expect(lines.some((line) => line.includes(asked) && line.includes(id()))).toBe(true);
          expect((await request(fleet.url).get('/v1/vms').expect(200)).body).toEqual(listedBefore);
          expect(await node('node-a')).toMatchObject({ vm_count: 0, ram_available_mb: 16384 });
          // Backed off: the next create is not placed there.
          const refused = await create(small).expect(503);
          expect(refused.body.message).toContain(
            'node-a: dispatch failed once in the last 40 s: failed',
          );
          expect(victimNode.calls).toEqual([]);
        },
      );
    });

    it('forgets a VM with ?forget=true without asking any agent, and the node with its last VM', async () => {
      const quiet = await agent((_call, res) => json(res, 204));
      const live = await agent((_call, res) => {
        res.writeHead(204).end();
      });
      await enroll('quiet', quiet, { vms: [vmRecord('vm-q1'), vmRecord('vm-q2')] });
      fleet.clock.advance(silentFor);
      await enroll('live', live, { vms: [vmRecord('vm-l1')] });
      await sweep();

      await request(fleet.url).delete('/v1/vms/vm-q1?forget=maybe').expect(400);
      await request(fleet.url).delete('/v1/vms/vm-q1?forget=true').expect(204);
      expect(ids((await request(fleet.url).get('/v1/vms').expect(200)).body)).toEqual([
        'vm-l1',
        'vm-q2',
      ]);
      await request(fleet.url).delete('/v1/vms/vm-q1?forget=true').expect(404);
      await request(fleet.url).delete('/v1/vms/vm-q2?forget=true').expect(204);
      expect(quiet.calls).toHaveLength(0);
      const repository = fleet.app.get(NodesRepository);
      expect((await repository.listAll()).map((n) => n.node_id)).toEqual(['live']);

      // On a live node (one back, say), forget=true forgets nothing: its agent can destroy it.
      const back = await request(fleet.url).delete('/v1/vms/vm-l1?forget=true').expect(409);
      expect(back.body.message).toBe(
        'vm vm-l1: node live is back (it heartbeats), so nothing is forgotten; DELETE /v1/vms/vm-l1 without forget destroys it',
      );
      expect(live.calls).toHaveLength(0);
      await request(fleet.url).delete('/v1/vms/vm-l1').expect(204);
      expect(live.calls).toEqual([{ method: 'DELETE', url: '/v1/vms/vm-l1', body: undefined }]);
      await request(fleet.url).get('/v1/vms').expect(200, []);
    });

    it('drops a node that listed no VM whole', async () => {
      const quiet = await agent((_call, res) => json(res, 204));
      await enroll('quiet', quiet, { vms: [] });
      fleet.clock.advance(silentFor);
      await sweep();
      expect(await fleet.app.get(NodesRepository).listAll()).toEqual([]);
    });

    it('answers a retried create with the VM its Idempotency-Key made on a node that dropped out since', async () => {
      let spawnKey: string | undefined;
      const first = await agent((call, res) => {
        spawnKey = spawnKeyOf(res);
        json(res, 201, spawned(call));
      });
      await enroll('first', first);
      const made = await create(small, 'order-1').expect(201);
      const { node_id: _shownNode, ...reported } = made.body as { node_id: string };
      await enroll('first', first, { vms: [{ ...reported, idempotency_key: spawnKey }] });
      const lastHeartbeat = new Date(fleet.clock.wallNow()).toISOString();
      fleet.clock.advance(silentFor);
      const other = await agent((call, res) => json(res, 201, spawned(call)));
      await enroll('other', other);
      await sweep();

      const retried = await create(small, 'order-1').expect(200);
      expect(retried.body).toEqual({ ...made.body, node_silent_since: lastHeartbeat });
      expect(other.calls).toHaveLength(0);
      expect(first.calls).toHaveLength(1);
    });
  });
});
