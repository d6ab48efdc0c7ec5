import type { ServerResponse } from 'node:http';
import request from 'supertest';
import {
  type AgentMoveOutRequest,
  type NodeDrain,
  type VmRecord,
  VmState,
} from '@app/fleet-domain';
import { createRequest } from '../factories/create-request.factory';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { StubAgent, StubAgentCall, json } from '../support/stub-agent';

/**
 * `node drain` / `undrain` on the controller's operations listener, with stub agents: the node is
 * passed over by placement (creates on :9203 say why) until undrained; each VM its agent lists is
 * moved off it by the move path (live when Running, cold when Stopped), each outcome answered and
 * kept (GET); a VM with no room anywhere is left where it is and named with why. Every answer is
 * checked against openapi/fleet-ops.openapi.json.
 */

const A = 'vm-00000000000000d1';
const B = 'vm-00000000000000d2';
const C = 'vm-00000000000000d3';

/** An old node whose agent moves each VM as asked: live when it runs, cold when stopped. */
function movingAgent(vms: Map<string, VmRecord>) {
  return (call: StubAgentCall, res: ServerResponse): void => {
    const moveOut = /^\/v1\/vms\/([^/]+)\/move-out$/.exec(call.url);
    if (call.method === 'POST' && moveOut && vms.has(moveOut[1])) {
      const vm = vms.get(moveOut[1])!;
      const mode = vm.state === VmState.Running ? 'live' : 'cold';
      return json(res, 200, {
        vm,
        mode,
        pause_ms: mode === 'live' ? 200 : null,
        total_ms: 3_000,
        bytes_sent: 1e6,
      });
    }
    if (call.method === 'POST' && /\/move-release$/.test(call.url)) {
      res.writeHead(204);
      return void res.end();
    }
    json(res, 404, { statusCode: 404, message: 'no such route' });
  };
}

describe('POST /v1/nodes/{node_id}/drain and /undrain (operations listener)', () => {
  let fleet: RunningFleet;
  const agents: StubAgent[] = [];
  let reporting: NodeJS.Timeout | undefined;

  beforeEach(async () => {
    fleet = await startFleet({ ops: true });
  });

  afterEach(async () => {
    clearInterval(reporting);
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

  async function beat(nodeId: string, stub: StubAgent, vms: VmRecord[] = [], ramUsedMb = 4096) {
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: nodeId, spawn_port: stub.port, vms, ram_used_mb: ramUsedMb }))
      .expect(200);
  }

  /**
   * The new node's agent reporting each VM the old one handed it, as a real one does in its next
   * heartbeat (the move answers once it did): a beat a millisecond later each time.
   */
  function reportMoves(from: StubAgent, toId: string, to: StubAgent, vms: Map<string, VmRecord>) {
    reporting = setInterval(() => {
      const moved = from.calls
        .filter(({ url }) => url.endsWith('/move-out'))
        .map(({ url }) => vms.get(url.split('/')[3])!);
      if (moved.length === 0) return;
      fleet.clock.advance(1);
      beat(toId, to, moved).catch(() => undefined);
    }, 50);
  }

  // No body: the listener takes a write only with this (or a token), as the CLI sends it.
  const drain = (nodeId: string) =>
    request(fleet.opsUrl).post(`/v1/nodes/${nodeId}/drain`).set('Content-Type', 'application/json');
  const undrain = (nodeId: string) =>
    request(fleet.opsUrl)
      .post(`/v1/nodes/${nodeId}/undrain`)
      .set('Content-Type', 'application/json');
  const status = (nodeId: string) => request(fleet.opsUrl).get(`/v1/nodes/${nodeId}/drain`);
  const create = (fields: object) =>
    request(fleet.url)
      .post('/v1/vms')
      .send(createRequest(fields as never));
  const listed = async () =>
    (
      (await request(fleet.url).get('/v1/vms').expect(200)).body as Array<{
        vm_id: string;
        node_id: string;
      }>
    )
      .map(({ vm_id, node_id }) => `${vm_id}@${node_id}`)
      .sort();

  it('moves every VM off the node (live, cold), passes it over until undrained, and keeps the outcomes', async () => {
    const vms = new Map<string, VmRecord>([
      [A, vmRecord(A, { state: VmState.Stopped, started_at: null })],
      [B, vmRecord(B)],
      [C, vmRecord(C)],
    ]);
    const n1 = await agent(movingAgent(vms));
    const n2 = await agent(movingAgent(new Map()));
    await beat('n1', n1, [...vms.values()], 1024);
    await beat('n2', n2);
    reportMoves(n1, 'n2', n2, vms);

    const { body } = (await drain('n1').expect(200)) as { body: NodeDrain };
    expect(body).toMatchObject({ node_id: 'n1', drained: true, remaining_vm_ids: [] });
    expect(
      body.vms.map(({ vm_id, outcome, to_node_id, mode }) => [vm_id, outcome, to_node_id, mode]),
    ).toEqual([
      [B, 'moved', 'n2', 'live'],
      [C, 'moved', 'n2', 'live'],
      [A, 'moved', 'n2', 'cold'],
    ]);
    const asked = n1.calls.filter(({ url }) => url.endsWith('/move-out'));
    expect(asked.map(({ url }) => url.split('/')[3])).toEqual([B, C, A]);
    expect((asked[0].body as AgentMoveOutRequest).to.node_id).toBe('n2');
    expect(await listed()).toEqual([`${A}@n2`, `${B}@n2`, `${C}@n2`]);

    // Passed over, saying why, though it has the most room.
    const passed = await create({ ram_mb: 13_000 }).expect(503);
    expect(passed.body.message).toMatch(/n1: drained since \S+ \(ppn-fleet node undrain ends it\)/);
    const preferred = await create({ preferred_node: 'n1' }).expect(422);
    expect(preferred.body.message).toMatch(/^preferred_node n1: drained since /);
    // So is it as a move's target.
    const moveBack = await request(fleet.opsUrl).post(`/v1/vms/${B}/move`).send({ to: 'n1' });
    expect(moveBack.status).toBe(422);
    expect(moveBack.body.message).toMatch(/preferred_node n1: drained since /);

    // Idempotent, and visible from GET.
    expect((await drain('n1').expect(200)).body).toMatchObject({ drained: true, vms: body.vms });
    expect((await status('n1').expect(200)).body).toEqual({ ...body, vms: body.vms });

    const ended = await undrain('n1').expect(200);
    expect(ended.body).toEqual({
      node_id: 'n1',
      drained: false,
      since: null,
      vms: [],
      remaining_vm_ids: [],
    });
    await undrain('n1').expect(200);
    expect((await status('n1').expect(200)).body.drained).toBe(false);
    // Placed on it again (its stub agent refuses the spawn: that is all this needs).
    await create({ ram_mb: 13_000 });
    expect(n1.calls.map(({ url }) => url)).toContain('/v1/spawn');
  });

  it('leaves a VM that has no room anywhere on the node, running, and says why', async () => {
    const big = vmRecord(A, { ram_alloc_mb: 8192 });
    const n1 = await agent(movingAgent(new Map([[A, big]])));
    const n2 = await agent(movingAgent(new Map()));
    await beat('n1', n1, [big]);
    await beat('n2', n2, [], 12_000);

    const { body } = (await drain('n1').expect(200)) as { body: NodeDrain };
    expect(body.vms).toEqual([
      {
        vm_id: A,
        outcome: 'left',
        to_node_id: null,
        mode: null,
        message: expect.stringMatching(new RegExp(`^vm ${A} cannot move: .*n2: needs 8704 MB`)),
        took_ms: expect.any(Number),
      },
    ]);
    expect(body.remaining_vm_ids).toEqual([A]);
    expect(n1.calls).toEqual([]);
    expect(await listed()).toEqual([`${A}@n1`]);
  });

  it('refuses an unknown node (404) and an id that is not one (400)', async () => {
    const n1 = await agent(movingAgent(new Map()));
    await beat('n1', n1);
    for (const call of [drain, undrain, status]) {
      expect((await call('n9').expect(404)).body.message).toBe('node n9 is not enrolled');
      expect((await call('-n1').expect(400)).body.message).toBe(
        'node_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
      );
    }
    expect((await status('n1').expect(200)).body).toEqual({
      node_id: 'n1',
      drained: false,
      since: null,
      vms: [],
      remaining_vm_ids: [],
    });
  });
});
