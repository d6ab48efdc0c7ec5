import type { ServerResponse } from 'node:http';
import request from 'supertest';
import { opsFleetWithStubs } from '../support/ops-fleet-stubs';
import { vmRecord } from '../support/heartbeats';
import { StubAgentCall, json } from '../support/stub-agent';

/**
 * A move whose old node's part fails midway (its agent killed, the mesh between the nodes cut),
 * with stub agents: the controller tells the new node to give the move up itself. A new node
 * that had received the whole guest runs it (409): the VM is recorded there and the old node,
 * listing it again, is told it is superseded. One that rolled it back (200): the VM stays on its
 * old node, nobody superseded, and the old node is told to resume a guest its move left paused.
 */

const VM = 'vm-00000000000000c3';
const PORTS = [{ host_port: 40022, guest_port: 22, protocol: 'tcp' as const }];

/** An old node whose move fails (502, as an agent cut short answers through the controller). */
function failingOldNode(call: StubAgentCall, res: ServerResponse): void {
  if (call.method === 'POST' && call.url === `/v1/vms/${VM}/move-out`) {
    return json(res, 502, { statusCode: 502, message: 'the move failed midway' });
  }
  if (call.method === 'POST' && call.url === `/v1/vms/${VM}/move-resume`) return json(res, 204);
  json(res, 404, { statusCode: 404, message: 'no such route' });
}

/** A new node answering the give-up with `status` (409: it runs the guest). */
function newNode(status: number) {
  return (call: StubAgentCall, res: ServerResponse): void => {
    if (call.method === 'DELETE' && call.url === `/v1/moves/${VM}/incoming`) {
      return json(res, status, { vm_id: VM });
    }
    json(res, 404, { statusCode: 404, message: 'no such route' });
  };
}

describe('a move cut midway (operations listener)', () => {
  const { fleet: running, agent, beat } = opsFleetWithStubs();

  const listed = async () =>
    (
      (await request(running().url).get('/v1/vms').expect(200)).body as Array<{
        vm_id: string;
        node_id: string;
      }>
    ).map(({ vm_id, node_id }) => `${vm_id}@${node_id}`);

  it('records the VM on the new node when that node received the whole guest, and supersedes the old one', async () => {
    const n1 = await agent(failingOldNode);
    const n2 = await agent(newNode(409));
    await beat('n1', n1, [vmRecord(VM, { tenant_id: 'acme', host_ports: PORTS })]);
    await beat('n2', n2);

    const { body } = await request(running().opsUrl)
      .post(`/v1/vms/${VM}/move`)
      .send({ to: 'n2' })
      .expect(502);
    expect(body.message).toBe(
      `vm ${VM}: its move from node n1 ended unconfirmed, but node n2 received the whole guest and runs it: it is node n2's now (node n1 sets its copy aside)`,
    );
    expect(n2.calls.map(({ method, url }) => `${method} ${url}`)).toEqual([
      `DELETE /v1/moves/${VM}/incoming`,
    ]);
    // The guest is n2's: n1 is never told to resume the one its move left paused.
    expect(n1.calls.map(({ method, url }) => `${method} ${url}`)).toEqual([
      `POST /v1/vms/${VM}/move-out`,
    ]);
    expect(await listed()).toEqual([`${VM}@n2`]);
    expect(await beat('n1', n1, [vmRecord(VM)])).toEqual({
      accepted: true,
      superseded_vm_ids: [VM],
    });
    // The new node keeps it (its answer may carry mesh routes: n1's record still lists the VM
    // until n1 sets it aside, and a node never forwards its own VMs' ports).
    const answer = await beat('n2', n2, [vmRecord(VM, { tenant_id: 'acme', host_ports: PORTS })]);
    expect(answer).toMatchObject({ accepted: true });
    expect(answer).not.toHaveProperty('superseded_vm_ids');
    expect(await listed()).toEqual([`${VM}@n2`]);
  });

  it('keeps the VM on its old node when the new node rolled the move back, superseding nobody', async () => {
    const n1 = await agent(failingOldNode);
    const n2 = await agent(newNode(200));
    await beat('n1', n1, [vmRecord(VM)]);
    await beat('n2', n2);
    await request(running().opsUrl).post(`/v1/vms/${VM}/move`).send({ to: 'n2' }).expect(502);
    expect(n2.calls.map(({ method, url }) => `${method} ${url}`)).toEqual([
      `DELETE /v1/moves/${VM}/incoming`,
    ]);
    // Nothing of the guest on n2: n1 runs again one its move may have left paused.
    expect(n1.calls.map(({ method, url }) => `${method} ${url}`)).toEqual([
      `POST /v1/vms/${VM}/move-out`,
      `POST /v1/vms/${VM}/move-resume`,
    ]);
    expect(await listed()).toEqual([`${VM}@n1`]);
    expect(await beat('n1', n1, [vmRecord(VM)])).toEqual({ accepted: true });
  });
});
