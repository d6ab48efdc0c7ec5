import type { ServerResponse } from 'node:http';
import request from 'supertest';
import { AGENT_REQUEST_TIMEOUT_MS } from '@app/fleet-domain';
import { VmHostClientSettings } from '../../apps/fleet/src/vms/vm-host.client';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { StubAgent, StubAgentCall, json, spawnedVm as spawned } from '../support/stub-agent';

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

  const create = (body: object) => request(fleet.url).post('/v1/vms').send(body);
  const small = { vm_type: 'web', ram_mb: 1024, vcpu_count: 1 };

  it('places on the node with the most free RAM, dispatches, and records the VM with its tenant', async () => {
    const small1 = await agent((call, res) => json(res, 201, spawned(call)));
    const big = await agent((call, res) => json(res, 201, spawned(call, 'vm-big-1')));
    await enroll('small', small1, { ram_total_mb: 8192, ram_used_mb: 4096 });
    await enroll('big', big, { ram_total_mb: 65536, ram_used_mb: 4096 });

    const { body } = await create({ ...small, tenant_id: 'acme' }).expect(201);
    expect(body).toEqual(
      vmRecord('vm-big-1', { state: 'Provisioning' as never, started_at: null, tenant_id: 'acme' }),
    );
    expect(small1.calls).toHaveLength(0);
    expect(big.calls).toEqual([
      {
        method: 'POST',
        url: '/v1/spawn',
        body: { ...small, prefer_kvm: false, tenant_id: 'acme' },
      },
    ]);

    const node = await request(fleet.url).get('/v1/nodes/big').expect(200);
    expect(node.body).toMatchObject({ vm_count: 1, ram_available_mb: 65536 - 4096 - 1024 });
    const acme = await request(fleet.url).get('/v1/vms?tenant_id=acme').expect(200);
    expect(acme.body.map((vm: { vm_id: string }) => vm.vm_id)).toEqual(['vm-big-1']);

    // The next heartbeat replaces the record: the node now accounts for the VM itself.
    await enroll('big', big, {
      ram_total_mb: 65536,
      ram_used_mb: 5120,
      vms: [vmRecord('vm-big-1', { tenant_id: 'acme', ram_alloc_mb: 1024 })],
    });
    const after = await request(fleet.url).get('/v1/nodes/big').expect(200);
    expect(after.body).toMatchObject({ vm_count: 1, ram_available_mb: 65536 - 5120 });
  });

  it('records the request tenant when the agent does not echo it', async () => {
    const quiet = await agent((call, res) =>
      json(res, 200, { ...spawned(call, 'vm-q'), tenant_id: undefined }),
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
      /n1 answered the spawn with an invalid VmRecord/,
      AGENT_REQUEST_TIMEOUT_MS,
    ],
    ['never answers', () => undefined, /n1 .* unreachable: no answer within 300 ms/, 300],
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

  it('answers 502 naming the node when its agent is unreachable', async () => {
    const gone = await agent(() => undefined);
    const port = gone.port;
    await gone.stop();
    await enroll('n1', { port });
    const { body } = await create(small).expect(502);
    expect(body.message).toMatch(/n1.*unreachable/);
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
});
