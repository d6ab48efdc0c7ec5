import type { ServerResponse } from 'node:http';
import request from 'supertest';
import { MOVE_GRANT_CONTEXT, verifyCopyGrant } from '@app/daemon';
import type { AgentMoveOutRequest, VmRecord } from '@app/fleet-domain';
import { opsFleetWithStubs } from '../support/ops-fleet-stubs';
import { vmRecord } from '../support/heartbeats';
import { StubAgentCall, json } from '../support/stub-agent';

/**
 * POST /v1/vms/{vm_id}/move on the controller's operations listener, with stub agents: the old
 * node's agent is asked with a move grant for the new node (signed for it, under the move
 * context), the old node releases its disk only once the new node reported the VM, the VM is
 * listed on its new node only, and the old node, listing it again, is told it is superseded while
 * the new one is not. The refusals change nothing. Every answer is checked against
 * openapi/fleet-ops.openapi.json.
 */

const VM = 'vm-00000000000000b2';
const PORTS = [
  { host_port: 40022, guest_port: 22, protocol: 'tcp' as const },
  { host_port: 48080, guest_port: 80, protocol: 'tcp' as const },
];

/** An old node whose agent moves the VM as asked (or refuses with `refusal`). */
function movingAgent(refusal?: { status: number; message: string }) {
  return (call: StubAgentCall, res: ServerResponse): void => {
    if (call.method === 'POST' && call.url === `/v1/vms/${VM}/move-out`) {
      if (refusal) return json(res, refusal.status, { statusCode: refusal.status, ...refusal });
      const vm: VmRecord = vmRecord(VM, { tenant_id: 'acme', host_ports: PORTS });
      return json(res, 200, { vm, mode: 'live', pause_ms: 240, total_ms: 12_000, bytes_sent: 5e8 });
    }
    if (call.method === 'POST' && call.url === `/v1/vms/${VM}/move-release`) {
      res.writeHead(204);
      return void res.end();
    }
    json(res, 404, { statusCode: 404, message: 'no such route' });
  };
}

describe('POST /v1/vms/{vm_id}/move (operations listener)', () => {
  const { fleet: running, agent, beat } = opsFleetWithStubs();

  const move = (body: object, vmId = VM) =>
    request(running().opsUrl).post(`/v1/vms/${vmId}/move`).send(body);

  const listed = async () =>
    (
      (await request(running().url).get('/v1/vms').expect(200)).body as Array<{
        vm_id: string;
        node_id: string;
      }>
    ).map(({ vm_id, node_id }) => `${vm_id}@${node_id}`);

  it('moves the VM with a grant for the new node, releases the old disk once the new node reports it, and supersedes the old node only', async () => {
    const n1 = await agent(movingAgent());
    const n2 = await agent(movingAgent());
    await beat('n1', n1, [vmRecord(VM, { tenant_id: 'acme', host_ports: PORTS })]);
    await beat('n2', n2);

    const answer = move({ to: 'n2' }).then((response) => response);
    await new Promise<void>((resolve, reject) => {
      const started = Date.now();
      const look = (): void => {
        if (n1.calls.some(({ url }) => url.endsWith('/move-out'))) return resolve();
        if (Date.now() - started > 5_000) return reject(new Error('the old node was not asked'));
        setTimeout(look, 20);
      };
      look();
    });
    // Not released before the new node reported the VM.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(n1.calls.map(({ url }) => url)).toEqual([`/v1/vms/${VM}/move-out`]);
    running().clock.advance(1_000);
    expect(await beat('n2', n2, [vmRecord(VM, { tenant_id: 'acme', host_ports: PORTS })])).toEqual({
      accepted: true,
    });
    const { status, body } = await answer;
    expect(status).toBe(200);
    expect(body).toMatchObject({
      vm: { vm_id: VM, node_id: 'n2', host_ports: PORTS },
      from_node_id: 'n1',
      mode: 'live',
      pause_ms: 240,
      total_ms: 12_000,
      bytes_sent: 5e8,
    });

    const { to } = n1.calls[0].body as AgentMoveOutRequest;
    expect(to).toMatchObject({ node_id: 'n2', address: `127.0.0.1:${n2.port}` });
    // Signed for n2 (agents open: the empty key), as a move grant, not as a copy grant.
    expect(
      verifyCopyGrant(undefined, 'n2', to.grant, running().clock.wallNow(), MOVE_GRANT_CONTEXT),
    ).toMatchObject({
      vm: VM,
      source: 'n1',
      peer: 'n2',
    });
    expect(verifyCopyGrant(undefined, 'n2', to.grant, running().clock.wallNow())).toEqual({
      refused: 'grant not signed for this node',
    });
    expect(n1.calls.map(({ url }) => url)).toEqual([
      `/v1/vms/${VM}/move-out`,
      `/v1/vms/${VM}/move-release`,
    ]);
    expect(await listed()).toEqual([`${VM}@n2`]);
    // The old node listing it again is told it is superseded; the new one is not. The old
    // node's routing mesh now forwards the VM's ports to the new node.
    expect(await beat('n1', n1, [vmRecord(VM)])).toEqual({
      accepted: true,
      superseded_vm_ids: [VM],
      mesh_routes: PORTS.map(({ host_port, protocol }) => ({
        host_port,
        protocol,
        vm_id: VM,
        node_id: 'n2',
        wg_ip: '127.0.0.1',
      })),
    });
    expect(await beat('n2', n2, [vmRecord(VM)])).toEqual({ accepted: true });
  });

  it('refuses an unknown VM (404), its own node or one not live (422), and no room anywhere (503), asking no agent', async () => {
    const n1 = await agent(movingAgent());
    await beat('n1', n1, [vmRecord(VM)]);
    expect((await move({}, 'vm-unknown').expect(404)).body.message).toBe(
      'vm vm-unknown is not on any node',
    );
    expect((await move({ to: 'n1' }).expect(422)).body.message).toBe(
      `to: vm ${VM} is on node n1 already`,
    );
    expect((await move({ to: 'n9' }).expect(422)).body.message).toBe(
      'to: node n9 is not a live node',
    );
    expect((await move({}).expect(503)).body.message).toBe(
      `no other live node to move vm ${VM} to`,
    );
    expect((await move({ to: '../x' }).expect(400)).body.message).toBe(
      'to must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
    );
    expect(n1.calls).toEqual([]);
    expect(await listed()).toEqual([`${VM}@n1`]);
  });

  it("passes on the old node's refusal (422) and keeps the VM where it is", async () => {
    const n1 = await agent(
      movingAgent({
        status: 422,
        message:
          "node n2 answered POST /v1/moves/vm-00000000000000b2/incoming with 422: machine: this node's QEMU has no machine type pc-q35-9.1",
      }),
    );
    const n2 = await agent(movingAgent());
    await beat('n1', n1, [vmRecord(VM)]);
    await beat('n2', n2);
    const { body } = await move({}).expect(422);
    expect(body.message).toBe(
      "node n1 refused the move: node n2 answered POST /v1/moves/vm-00000000000000b2/incoming with 422: machine: this node's QEMU has no machine type pc-q35-9.1",
    );
    expect(await listed()).toEqual([`${VM}@n1`]);
    expect(await beat('n1', n1, [vmRecord(VM)])).toEqual({ accepted: true });
  });
});
