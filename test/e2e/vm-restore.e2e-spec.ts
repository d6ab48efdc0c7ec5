import { writeFileSync } from 'node:fs';
import { grantCopies } from '../support/granted-copies';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import request from 'supertest';
import { verifyCopyReadGrant } from '@app/daemon';
import { NODE_STALE_AFTER_MS } from '@app/fleet-domain';
import type { AgentRestoreRequest, HeartbeatReplica, VmRecord } from '@app/fleet-domain';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { scratchFolder } from '../support/scratch-folders';
import { StubAgent, StubAgentCall, json } from '../support/stub-agent';

/**
 * POST /v1/vms/{vm_id}/restore on the controller's operations listener, with stub agents: the
 * rules (409 while a live node lists the VM, 422 naming the field and where copies are, 404 for
 * a VM nobody knows), nothing changed on a refusal, and a restore that lists the VM on its new
 * node only and has its old node told it is superseded. Every answer is checked against
 * openapi/fleet-ops.openapi.json.
 */

const VM = 'vm-00000000000000a1';
const CHAIN = '20261205T041700Z-3f2a';
// Before the heartbeats' stamps (2026-08-06T12:00Z): a copy from after its heartbeat is not believed.
const COPIED_AT = '2026-08-06T11:59:30.000Z';
const PORTS = [
  { host_port: 40022, guest_port: 22, protocol: 'tcp' as const },
  { host_port: 48080, guest_port: 80, protocol: 'tcp' as const },
];

function replica(vm_id = VM, copied_at = COPIED_AT): HeartbeatReplica {
  return { vm_id, source_node_id: 'n1', copied_at, size_bytes: 1_048_576 };
}

/** An agent's restore points: one replica point and one backup, and the manifest's VM. */
function points(vmId: string, sources: Array<'replica' | 'backup'>): object {
  return {
    vm_id: vmId,
    points: sources.map((source, index) => ({
      source,
      backup_id: `${CHAIN}/${String(index).padStart(4, '0')}`,
      kind: index === 0 ? 'full' : 'incremental',
      taken_at: `2026-12-05T04:1${7 - index}:30.000Z`,
      size_bytes: 1000,
    })),
    spec: {
      vm_type: 'web',
      ram_mb: 512,
      vcpu_count: 1,
      tenant_id: 'acme',
      ports: PORTS,
      disk_gb: 8,
    },
  };
}

/** A stub agent that holds `sources` for the VM and makes what it is asked to restore. */
function restoringAgent(sources: Array<'replica' | 'backup'>) {
  return (call: StubAgentCall, res: ServerResponse): void => {
    const restored = /^\/v1\/restores\/([^/]+)\/points$/.exec(call.url);
    if (call.method === 'GET' && restored) return json(res, 200, points(restored[1], sources));
    if (call.method === 'POST' && call.url === '/v1/restores') {
      const body = call.body as AgentRestoreRequest;
      const vm: VmRecord = vmRecord(body.vm_id, {
        state: 'Provisioning' as VmRecord['state'],
        ram_alloc_mb: body.ram_mb,
        tenant_id: body.tenant_id ?? null,
        host_ports: body.keep_host_ports
          ? body.ports
          : body.ports.map((port, index) => ({ ...port, host_port: 50000 + index })),
        started_at: null,
      });
      const point = points(body.vm_id, sources) as { points: object[] };
      // A copy pulled from its holder: the point the holder's points named.
      const pulled = body.source.pull && (points(body.vm_id, ['replica']) as { points: object[] });
      return json(res, 201, { vm, point: (pulled || point).points[0] });
    }
    json(res, 404, { statusCode: 404, message: 'no such route' });
  };
}

describe('POST /v1/vms/{vm_id}/restore (operations listener)', () => {
  let fleet: RunningFleet;
  const agents: StubAgent[] = [];

  beforeEach(async () => {
    fleet = await startFleet({ ops: true });
  });

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

  async function beat(
    nodeId: string,
    stub: StubAgent,
    fields: { vms?: VmRecord[]; replicas?: HeartbeatReplica[] } = {},
  ): Promise<{ accepted: boolean; superseded_vm_ids?: string[] }> {
    grantCopies(fleet, nodeId, fields.replicas);
    const { body } = await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: nodeId, spawn_port: stub.port, ...fields }))
      .expect(200);
    return body as { accepted: boolean; superseded_vm_ids?: string[] };
  }

  const restore = (body: object, vmId = VM) =>
    request(fleet.opsUrl).post(`/v1/vms/${vmId}/restore`).send(body);

  const listed = async () =>
    (
      (await request(fleet.url).get('/v1/vms').expect(200)).body as Array<{
        vm_id: string;
        node_id: string;
        node_silent_since?: string;
      }>
    ).map(({ vm_id, node_id, node_silent_since }) => ({
      vm_id,
      node_id,
      silent: node_silent_since !== undefined,
    }));

  /** n1 listed the VM and went silent; n2 (live) holds its copy. */
  async function nodeLost(): Promise<{ n1: StubAgent; n2: StubAgent }> {
    const n1 = await agent(restoringAgent([]));
    const n2 = await agent(restoringAgent(['replica']));
    await beat('n1', n1, { vms: [vmRecord(VM, { tenant_id: 'acme', host_ports: PORTS })] });
    fleet.clock.advance(NODE_STALE_AFTER_MS + 1_000);
    await beat('n2', n2, { replicas: [replica()] });
    return { n1, n2 };
  }

  it('refuses a VM a live node still lists (409, naming it), asking no agent, changing nothing', async () => {
    const n1 = await agent(restoringAgent([]));
    const n2 = await agent(restoringAgent(['replica']));
    await beat('n1', n1, { vms: [vmRecord(VM)] });
    await beat('n2', n2, { replicas: [replica()] });
    const before = await listed();
    const { body } = await restore({}).expect(409);
    expect(body.message).toBe(
      `vm ${VM} still runs on node n1 (its live agent lists it): delete it there first, or restore it as a new VM beside it (as_new)`,
    );
    expect(await listed()).toEqual(before);
    expect([...n1.calls, ...n2.calls]).toEqual([]);
  });

  it.each([
    [
      'from a node that holds no copy',
      { from: 'n3' },
      `from: node n3 holds no copy of vm ${VM}; copies of vm ${VM} are on node n2 (copied ${COPIED_AT})`,
    ],
    [
      'a backup without to',
      { from: `${CHAIN}/0001` },
      `to: a backup (from ${CHAIN}/0001) is read from the VM_BACKUP_DIR of the node named by to; name that node`,
    ],
    [
      'a node that is not live',
      { to: 'n1' },
      `to: node n1 is not live (no heartbeat in the last 30 s); copies of vm ${VM} are on node n2 (copied ${COPIED_AT})`,
    ],
  ])('refuses %s with 422 naming the field, changing nothing', async (_, body, message) => {
    const { n1, n2 } = await nodeLost();
    const n3 = await agent(restoringAgent([]));
    await beat('n3', n3);
    const before = await listed();
    const refused = await restore(body).expect(422);
    expect(refused.body.message).toBe(message);
    expect(await listed()).toEqual(before);
    expect(
      [...n1.calls, ...n2.calls, ...n3.calls].filter((call) => call.method === 'POST'),
    ).toEqual([]);
  });

  it.each([[{ to: 'n3' }], [{ from: 'n2', to: 'n3' }]])(
    'onto a node that holds no copy (%j): pulled from its holder with a read grant for that VM, holder and node',
    async (body) => {
      const { n2 } = await nodeLost();
      const n3 = await agent(restoringAgent([]));
      await beat('n3', n3);
      const { body: answer } = await restore(body).expect(201);
      expect(answer.vm).toEqual(expect.objectContaining({ vm_id: VM, node_id: 'n3' }));
      expect(answer.point).toEqual(
        expect.objectContaining({ source: 'replica', backup_id: `${CHAIN}/0000` }),
      );
      expect(n2.calls.map(({ method, url }) => `${method} ${url}`)).toEqual([
        `GET /v1/restores/${VM}/points`,
      ]);
      const sent = n3.calls.find((call) => call.method === 'POST')!.body as AgentRestoreRequest;
      expect(sent.source).toEqual({
        replica: true,
        vm_id: VM,
        pull: {
          node_id: 'n2',
          address: expect.stringMatching(new RegExp(`:${n2.port}$`)) as string,
          grant: expect.any(String) as string,
          backup_id: `${CHAIN}/0000`,
        },
      });
      // Signed with n2's token (none: this fleet's agents are open), for n2 to check.
      const grant = verifyCopyReadGrant(undefined, 'n2', sent.source.pull!.grant, 0);
      expect(grant).toEqual(
        expect.objectContaining({ vm: VM, holder: 'n2', reader: 'n3', moves: true }),
      );
      expect(verifyCopyReadGrant('other-token', 'n2', sent.source.pull!.grant, 0)).toEqual({
        refused: 'grant not signed for this node',
      });
      expect(await listed()).toEqual([{ vm_id: VM, node_id: 'n3', silent: false }]);
    },
  );

  it('refuses with 422 a node named by to that holds no copy and no backup, with no copy elsewhere', async () => {
    const n1 = await agent(restoringAgent([]));
    await beat('n1', n1, { vms: [vmRecord(VM)] });
    fleet.clock.advance(NODE_STALE_AFTER_MS + 1_000);
    const n3 = await agent(restoringAgent([]));
    await beat('n3', n3);
    const { body } = await restore({ to: 'n3' }).expect(422);
    expect(body.message).toBe(
      `to: node n3 holds no copy and no backup of vm ${VM}; no live node holds a copy of vm ${VM}`,
    );
  });

  it('answers 404 for a VM it has no record of and no copy of', async () => {
    const n2 = await agent(restoringAgent([]));
    await beat('n2', n2);
    const { body } = await restore({}, 'vm-00000000000000ff').expect(404);
    expect(body.message).toBe(
      'vm vm-00000000000000ff is not known here and no live node holds a copy of it; restore it from a backup: from <backup_id> with to <node>',
    );
  });

  it.each([
    [{ to: '-bad' }, 'to'],
    [{ as_new: 'yes' }, 'as_new'],
    [{ at: 'yesterday' }, 'at'],
    [{ from: 'a\u0007b' }, 'from'],
  ])('refuses the body %j with 400 naming %s', async (body, field) => {
    const { body: answer } = await restore(body).expect(400);
    expect(JSON.stringify(answer.message)).toContain(field);
  });

  it("restores a lost node's VM from the freshest copy: listed on its new node only, its old node told it is superseded", async () => {
    const { n1, n2 } = await nodeLost();
    const { body } = await restore({}).expect(201);
    expect(body).toEqual({
      vm: expect.objectContaining({
        vm_id: VM,
        node_id: 'n2',
        tenant_id: 'acme',
        host_ports: PORTS,
      }),
      point: expect.objectContaining({ source: 'replica', backup_id: `${CHAIN}/0000` }),
      replaced_node_id: 'n1',
    });
    const sent = n2.calls.find((call) => call.method === 'POST')!.body as AgentRestoreRequest;
    expect(sent).toEqual({
      vm_id: VM,
      vm_type: 'web',
      ram_mb: 1024,
      vcpu_count: 1,
      tenant_id: 'acme',
      ports: PORTS,
      keep_host_ports: true,
      // The controller's moment, recorded by the holder as the copy's restore (not its own clock).
      issued_at: new Date(fleet.clock.wallNow()).toISOString(),
      disk_gb: 8,
      source: { replica: true, vm_id: VM },
    });
    expect(await listed()).toEqual([{ vm_id: VM, node_id: 'n2', silent: false }]);

    // The old node comes back listing its stale copy: told to set it aside, listed nowhere but n2.
    const back = await beat('n1', n1, { vms: [vmRecord(VM)] });
    expect(back).toEqual({ accepted: true, superseded_vm_ids: [VM] });
    expect(await listed()).toEqual([{ vm_id: VM, node_id: 'n2', silent: false }]);
    // Its new node is not.
    expect(await beat('n2', n2, { vms: [vmRecord(VM)] })).toEqual({ accepted: true });
  });

  it('restores from a backup on the node named by to, at or before `at`', async () => {
    const { n2 } = await nodeLost();
    const n3 = await agent(restoringAgent(['backup', 'backup']));
    await beat('n3', n3);
    const { body } = await restore({ from: CHAIN, to: 'n3', at: '2026-12-05T04:16:45Z' }).expect(
      201,
    );
    expect(body.point).toEqual(
      expect.objectContaining({
        source: 'backup',
        backup_id: `${CHAIN}/0001`,
        taken_at: '2026-12-05T04:16:30.000Z',
      }),
    );
    const sent = n3.calls.find((call) => call.method === 'POST')!.body as AgentRestoreRequest;
    expect(sent.source).toEqual({ backup_id: `${CHAIN}/0001`, vm_id: VM });
    expect(n2.calls).toEqual([]);
    const late = await restore(
      { from: CHAIN, to: 'n3', at: '2026-01-01T00:00:00Z' },
      'vm-00000000000000b2',
    ).expect(422);
    expect(late.body.message).toMatch(/^at: none was taken at or before 2026-01-01T00:00:00Z/);
  });

  it('with to alone, takes the copy that node holds even when its heartbeat did not report it', async () => {
    await nodeLost();
    const n3 = await agent(restoringAgent(['replica']));
    await beat('n3', n3);
    const { body } = await restore({ to: 'n3' }).expect(201);
    expect(body.point).toEqual(expect.objectContaining({ source: 'replica' }));
    const sent = n3.calls.find((call) => call.method === 'POST')!.body as AgentRestoreRequest;
    expect(sent.source).toEqual({ replica: true, vm_id: VM });
  });

  it('restores a VM that still runs as a new one (as_new): another id, new host ports, nothing superseded', async () => {
    const n1 = await agent(restoringAgent([]));
    const n2 = await agent(restoringAgent(['replica']));
    await beat('n1', n1, { vms: [vmRecord(VM, { host_ports: PORTS })] });
    await beat('n2', n2, { replicas: [replica()] });
    const { body } = await restore({ as_new: true }).expect(201);
    expect(body.vm.vm_id).toMatch(/^vm-[0-9a-f]{16}$/);
    expect(body.vm.vm_id).not.toBe(VM);
    expect(body.replaced_node_id).toBeNull();
    const sent = n2.calls.find((call) => call.method === 'POST')!.body as AgentRestoreRequest;
    expect(sent).toMatchObject({ keep_host_ports: false, source: { replica: true, vm_id: VM } });
    expect(await beat('n1', n1, { vms: [vmRecord(VM)] })).toEqual({ accepted: true });
    expect((await listed()).map(({ vm_id }) => vm_id).sort()).toEqual([VM, body.vm.vm_id].sort());
  });

  describe("against the tenant's quota", () => {
    /** The fleet again, with acme allowed one VM. */
    async function withQuota(): Promise<void> {
      await fleet.close();
      const quotas = join(scratchFolder('ppn-restore-quotas-'), 'quotas.json');
      writeFileSync(quotas, JSON.stringify({ acme: { vms: 1 } }));
      fleet = await startFleet({ ops: true, env: { VM_FLEET_TENANT_QUOTAS_FILE: quotas } });
    }

    it('refuses an as_new restore beyond the quota with 429, nothing asked of the agent', async () => {
      await withQuota();
      const n1 = await agent(restoringAgent([]));
      const n2 = await agent(restoringAgent(['replica']));
      await beat('n1', n1, { vms: [vmRecord(VM, { tenant_id: 'acme', host_ports: PORTS })] });
      await beat('n2', n2, { replicas: [replica()] });
      const { body } = await restore({ as_new: true }).expect(429);
      expect(body.message).toContain('vms: 1 VMs in use + 1 requested > limit 1 VMs');
      expect(n2.calls.filter((call) => call.method === 'POST')).toEqual([]);
      expect((await listed()).map(({ vm_id }) => vm_id)).toEqual([VM]);
    });

    it('does not count twice a lost VM still listed: its restore replaces it', async () => {
      await withQuota();
      await nodeLost();
      // Still listed (its node silent): the restore replaces it, the tenant's use unchanged.
      await restore({}).expect(201);
      expect((await listed()).map(({ vm_id }) => vm_id)).toEqual([VM]);
    });

    it('counts a VM the fleet forgot (no record, only its copy) as a new one', async () => {
      await withQuota();
      const n2 = await agent(restoringAgent(['replica']));
      // Another VM of acme's fills the quota; the controller has no record of VM any more.
      await beat('n2', n2, {
        vms: [vmRecord('vm-00000000000000b2', { tenant_id: 'acme' })],
        replicas: [replica()],
      });
      const { body } = await restore({}).expect(429);
      expect(body.message).toContain('limit 1 VMs');
      expect(n2.calls.filter((call) => call.method === 'POST')).toEqual([]);
    });
  });
});
