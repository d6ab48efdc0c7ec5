import type { ServerResponse } from 'node:http';
import request from 'supertest';
import { type VmRecord, VmState } from '@app/fleet-domain';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { StubAgent, StubAgentCall, json } from '../support/stub-agent';

/**
 * The web console's Move button (a VM's page) and Drain / Undrain (a node's page), in-process
 * with stub agents: each posts with the session's CSRF token to the move and drain services and
 * answers their outcome; a drained node carries the "draining" mark and placement's reason.
 */

const VM = 'vm-00000000000000e1';

function sessionOf(setCookie: string[] | string | undefined): string {
  const header = ([] as string[]).concat(setCookie ?? []).find((line) => line.startsWith('ppn_'));
  if (header === undefined) throw new Error('no session cookie was set');
  return header.split(';')[0];
}

function csrfOf(page: string): string {
  const token = /<meta name="csrf-token" content="([^"]+)" \/>/.exec(page)?.[1];
  if (token === undefined) throw new Error('the page carries no CSRF token');
  return token;
}

/** An agent moving the VM as asked (live), releasing its old disk. */
function movingAgent(call: StubAgentCall, res: ServerResponse): void {
  if (call.method === 'POST' && call.url === `/v1/vms/${VM}/move-out`) {
    return json(res, 200, {
      vm: vmRecord(VM),
      mode: 'live',
      pause_ms: 180,
      total_ms: 2_000,
      bytes_sent: 1e6,
    });
  }
  if (call.method === 'POST' && call.url.endsWith('/move-release')) {
    res.writeHead(204);
    return void res.end();
  }
  json(res, 404, { statusCode: 404, message: 'no such route' });
}

describe('web console: Move, Drain and Undrain', () => {
  let fleet: RunningFleet;
  let n1: StubAgent;
  let n2: StubAgent;
  let reporting: NodeJS.Timeout | undefined;

  beforeEach(async () => {
    fleet = await startFleet({ ops: true });
    n1 = await new StubAgent(movingAgent).start();
    n2 = await new StubAgent(movingAgent).start();
  });

  afterEach(async () => {
    clearInterval(reporting);
    await Promise.all([n1.stop(), n2.stop()]);
    await fleet.close();
  });

  async function beat(nodeId: string, stub: StubAgent, vms: VmRecord[] = []): Promise<void> {
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: nodeId, spawn_port: stub.port, vms }))
      .expect(200);
  }

  /** n2's agent lists the VM once n1's was asked to move it, as its next heartbeat would. */
  function reportMove(): void {
    reporting = setInterval(() => {
      if (!n1.calls.some(({ url }) => url.endsWith('/move-out'))) return;
      fleet.clock.advance(1);
      beat('n2', n2, [vmRecord(VM)]).catch(() => undefined);
    }, 50);
  }

  async function session(): Promise<{ cookie: string; csrf: string }> {
    const page = await request(fleet.opsUrl).get('/').expect(200);
    return { cookie: sessionOf(page.headers['set-cookie']), csrf: csrfOf(page.text) };
  }

  it("moves a VM from its page to the node chosen, answering the move's outcome", async () => {
    await beat('n1', n1, [vmRecord(VM, { state: VmState.Running })]);
    await beat('n2', n2);
    const { cookie, csrf } = await session();
    const page = await request(fleet.opsUrl).get(`/vms/${VM}`).set('Cookie', cookie).expect(200);
    expect(page.text).toContain(`data-action="/console/vms/${VM}/move"`);
    const options = [...page.text.matchAll(/<option value="([^"]*)">/g)].map(([, id]) => id);
    expect(options).toEqual(['', 'n2']);

    const post = () => request(fleet.opsUrl).post(`/console/vms/${VM}/move`).set('Cookie', cookie);
    await post().send({ to: 'n2' }).expect(403);
    expect(n1.calls.filter(({ url }) => url.endsWith('/move-out'))).toEqual([]);
    reportMove();
    const moved = await post().set('X-CSRF-Token', csrf).send({ to: 'n2' }).expect(200);
    expect(moved.body.message).toBe(
      `vm ${VM} moved live from node n1 to node n2 in 2.0 s, guest paused 180 ms`,
    );
    const refused = await post().set('X-CSRF-Token', csrf).send({ to: 'n2' }).expect(422);
    expect(refused.body.message).toBe(`to: vm ${VM} is on node n2 already`);
  });

  it('drains a node from its page: the "draining" mark, placement\'s reason, then Undrain', async () => {
    await beat('n1', n1, [vmRecord(VM, { state: VmState.Running })]);
    await beat('n2', n2);
    const { cookie, csrf } = await session();
    // Past the console's shared read of the fleet (2 s), so each page reads it anew.
    const nodePage = () => {
      fleet.clock.advance(2_500);
      return request(fleet.opsUrl).get('/nodes/n1').set('Cookie', cookie).expect(200);
    };
    const before = await nodePage();
    expect(before.text).toContain('data-action="/console/nodes/n1/drain"');
    expect(before.text).not.toContain('draining');

    reportMove();
    const post = (path: string) =>
      request(fleet.opsUrl).post(path).set('Cookie', cookie).set('X-CSRF-Token', csrf).send({});
    const drained = await post('/console/nodes/n1/drain').expect(200);
    expect(drained.body.message).toBe(`node n1 drained: 1 VM(s) moved (${VM} live to n2)`);

    const during = await nodePage();
    expect(during.text).toContain('>draining</span');
    expect(during.text).toContain('data-action="/console/nodes/n1/undrain"');
    expect(during.text).toMatch(
      /passes it over: drained since \S+ \(ppn-fleet node undrain ends it\)/,
    );
    const overview = await request(fleet.opsUrl).get('/').set('Cookie', cookie).expect(200);
    expect(overview.text).toContain('>draining</span');
    // The VM's page offers no drained node as a target.
    const vmPage = await request(fleet.opsUrl).get(`/vms/${VM}`).set('Cookie', cookie).expect(200);
    expect([...vmPage.text.matchAll(/<option value="([^"]*)">/g)].map(([, id]) => id)).toEqual([
      '',
    ]);

    const undrained = await post('/console/nodes/n1/undrain').expect(200);
    expect(undrained.body.message).toBe('node n1 undrained: placement may choose it again');
    const after = await nodePage();
    expect(after.text).not.toContain('draining');
    expect(after.text).toContain('data-action="/console/nodes/n1/drain"');
    await post('/console/nodes/n9/drain').expect(404);
  });
});
