import request from 'supertest';
import type { ServerResponse } from 'node:http';
import { deriveNodeToken } from '@app/daemon';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat } from '../support/heartbeats';
import { StubAgent, json, spawnedVm } from '../support/stub-agent';
import { RunningVmHost, startVmHostApp } from '../support/vm-host-app';

/**
 * Per-node tokens (VM_FLEET_NODE_SECRET), over HTTP against the real controller app: a heartbeat
 * speaks for its own node_id only, the controller calls each agent with that node's token, and
 * the migration (shared token beside the secret) and rotation (previous secret) windows.
 */
const SECRET = 'fleet-node-secret-9d3b7f1a5c0e2846a1b3c5d7';
const PREVIOUS = 'fleet-node-secret-previous-0f2e4d6c8b1a3957';
const SHARED = 'shared-node-token-6a0c2e4f8b1d3957';
const API_TOKEN = 'api-token-2b4d6f8a0c1e3957';
const asOperator = { Authorization: `Bearer ${API_TOKEN}` };
const tokenOf = (nodeId: string, secret = SECRET): string => deriveNodeToken(secret, nodeId);
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** The bearer token of the request `res` answers. */
function tokenSent(res: ServerResponse): string | undefined {
  return /^Bearer (.+)$/.exec(res.req.headers.authorization ?? '')?.[1];
}

describe('fleet controller with VM_FLEET_NODE_SECRET', () => {
  let fleet: RunningFleet;
  let agent: StubAgent;
  /** The token each call to the stub agent carried, in order. */
  let sent: Array<string | undefined>;

  async function start(env: NodeJS.ProcessEnv, agentTakes: (token?: string) => boolean) {
    fleet = await startFleet({ env: { VM_FLEET_API_TOKEN: API_TOKEN, ...env } });
    sent = [];
    agent = await new StubAgent((call, res) => {
      const token = tokenSent(res);
      sent.push(token);
      if (!agentTakes(token)) return json(res, 401, { statusCode: 401, message: 'no' });
      if (call.method === 'POST') return json(res, 201, spawnedVm(call));
      return json(res, 404, { statusCode: 404, message: 'no such vm' });
    }).start();
  }

  afterEach(async () => {
    await agent.stop();
    await fleet.close();
  });

  function beat(nodeId: string, headers: Record<string, string>, body: object = {}) {
    return request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .set(headers)
      .send(heartbeat({ node_id: nodeId, spawn_port: agent.port, ...body }));
  }

  const listed = async (): Promise<string[]> =>
    (await request(fleet.url).get('/v1/nodes').set(asOperator).expect(200)).body.map(
      (node: { node_id: string }) => node.node_id,
    );

  describe('alone', () => {
    beforeEach(() => start({ VM_FLEET_NODE_SECRET: SECRET }, (t) => t === tokenOf('node-a')));

    it("enrolls node A with A's token", async () => {
      await beat('node-a', bearer(tokenOf('node-a'))).expect(200, { accepted: true });
      expect(await listed()).toEqual(['node-a']);
    });

    it.each([
      ["node A's token", () => tokenOf('node-a')],
      ['the secret itself', () => SECRET],
      ['a token under another secret', () => tokenOf('node-b', PREVIOUS)],
      ['the API token', () => API_TOKEN],
    ])(
      "refuses node B's heartbeat with %s: 401 saying so, never echoing it, storing nothing",
      async (_what, token) => {
        await beat('node-a', bearer(tokenOf('node-a'))).expect(200);
        const refused = await beat('node-b', bearer(token()));
        expect(refused.status).toBe(401);
        expect(refused.headers['www-authenticate']).toBe(
          'Bearer realm="service-vm-fleet", error="invalid_token"',
        );
        expect(refused.body.message).toMatch(
          /^the bearer token does not belong to node node-b: .*ppn-fleet node-token node-b/,
        );
        expect(JSON.stringify(refused.body)).not.toContain(token());
        expect(await listed()).toEqual(['node-a']);
      },
    );

    it("keeps node A's record from node B's token (no take-over)", async () => {
      await beat('node-a', bearer(tokenOf('node-a')), { hostname: 'real-a' }).expect(200);
      await beat('node-a', bearer(tokenOf('node-b')), { hostname: 'thief' }).expect(401);
      const node = await request(fleet.url).get('/v1/nodes/node-a').set(asOperator).expect(200);
      expect(node.body.hostname).toBe('real-a');
    });

    it('refuses a heartbeat without a token, naming the variable that holds it', async () => {
      const refused = await beat('node-a', {});
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toBe('Bearer realm="service-vm-fleet"');
      expect(refused.body.message).toContain('VM_FLEET_NODE_TOKEN');
      expect(await listed()).toEqual([]);
    });

    it('parses and validates the body within its limits before judging the token', async () => {
      const tooLarge = await request(fleet.url)
        .post('/v1/nodes/heartbeat')
        .set(bearer(SECRET))
        .set('content-type', 'application/json')
        .send(`{"node_id": "node-a", "pad": "${'x'.repeat(2 * 1024 * 1024)}"}`);
      expect(tooLarge.status).toBe(413);
      const invalid = await beat('node-a', bearer(SECRET), { ram_total_mb: -1 });
      expect(invalid.status).toBe(400);
      expect(await listed()).toEqual([]);
    });

    it("sends a create placed on node A and its delete to A's agent with A's token", async () => {
      await beat('node-a', bearer(tokenOf('node-a'))).expect(200);
      const created = await request(fleet.url)
        .post('/v1/vms')
        .set(asOperator)
        .send({ vm_type: 'web', ram_mb: 64, vcpu_count: 1 });
      expect(created.status).toBe(201);
      expect(created.body.node_id).toBe('node-a');
      await request(fleet.url).delete(`/v1/vms/${created.body.vm_id}`).set(asOperator).expect(204);
      expect(sent).toEqual([tokenOf('node-a'), tokenOf('node-a')]);
    });

    it('asks an agent that refuses its node token once, then answers 502', async () => {
      await beat('node-b', bearer(tokenOf('node-b'))).expect(200);
      const created = await request(fleet.url)
        .post('/v1/vms')
        .set(asOperator)
        .send({ vm_type: 'web', ram_mb: 64, vcpu_count: 1, preferred_node: 'node-b' });
      expect(created.status).toBe(502);
      expect(created.body.message).toContain('answered 401');
      expect(sent).toEqual([tokenOf('node-b')]);
    });
  });

  describe('beside the shared VM_FLEET_NODE_TOKEN (a migration)', () => {
    // The listener takes the shared token and node-b's own, nothing else.
    beforeEach(() =>
      start(
        { VM_FLEET_NODE_SECRET: SECRET, VM_FLEET_NODE_TOKEN: SHARED },
        (t) => t === SHARED || t === tokenOf('node-b'),
      ),
    );

    const createOn = (nodeId?: string) =>
      request(fleet.url)
        .post('/v1/vms')
        .set(asOperator)
        .send({ vm_type: 'web', ram_mb: 64, vcpu_count: 1, preferred_node: nodeId });

    it('takes the shared token from any node and each node its own, but not one for another', async () => {
      await beat('node-a', bearer(SHARED)).expect(200);
      await beat('node-b', bearer(tokenOf('node-b'))).expect(200);
      await beat('node-b', bearer(tokenOf('node-a'))).expect(401);
      await beat('node-b', bearer(SECRET)).expect(401);
      expect(await listed()).toEqual(['node-a', 'node-b']);
    });

    it('calls a node that heartbeated with the shared token with the shared token alone, never its own', async () => {
      await beat('node-a', bearer(SHARED)).expect(200);
      const onA = await createOn('node-a');
      expect(onA.status).toBe(201);
      expect(sent).toEqual([SHARED]);
    });

    it("never sends node B's own token to whoever last heartbeated as B with the shared token", async () => {
      await beat('node-b', bearer(tokenOf('node-b'))).expect(200);
      // A holder of the shared token speaks for B from an address of its own.
      await beat('node-b', bearer(SHARED), { hostname: 'thief' }).expect(200);
      expect((await createOn('node-b')).status).toBe(201);
      await beat('node-b', bearer(tokenOf('node-b'))).expect(200);
      expect((await createOn('node-b')).status).toBe(201);
      // Each call carried the kind the heartbeat before it was taken with.
      expect(sent).toEqual([SHARED, tokenOf('node-b')]);
    });

    it('never offers the shared token to an agent that refuses its own (401): the next node takes the create', async () => {
      // node-a heartbeats with its own token, but what answers at its address does not take it.
      await beat('node-a', bearer(tokenOf('node-a'))).expect(200);
      await beat('node-b', bearer(tokenOf('node-b'))).expect(200);
      const created = await createOn();
      expect(created.status).toBe(201);
      expect(created.body.node_id).toBe('node-b');
      expect(sent).toEqual([tokenOf('node-a'), tokenOf('node-b')]);
      // node-a is passed over for a while, as any node whose dispatch failed.
      expect((await createOn()).body.node_id).toBe('node-b');
      expect(sent).toEqual([tokenOf('node-a'), tokenOf('node-b'), tokenOf('node-b')]);
      expect(sent).not.toContain(SHARED);
    });
  });

  describe('with VM_FLEET_NODE_SECRET_PREVIOUS (a rotation)', () => {
    // The listener takes node-a's token under the previous secret, nothing else.
    beforeEach(() =>
      start(
        { VM_FLEET_NODE_SECRET: SECRET, VM_FLEET_NODE_SECRET_PREVIOUS: PREVIOUS },
        (t) => t === tokenOf('node-a', PREVIOUS),
      ),
    );

    it("takes a node's token under either secret, for that node only", async () => {
      await beat('node-a', bearer(tokenOf('node-a', PREVIOUS))).expect(200);
      await beat('node-b', bearer(tokenOf('node-b'))).expect(200);
      await beat('node-b', bearer(tokenOf('node-a', PREVIOUS))).expect(401);
      await beat('node-b', bearer(PREVIOUS)).expect(401);
      expect(await listed()).toEqual(['node-a', 'node-b']);
    });

    it('calls a node that heartbeated with its old token with that old token alone, never its new one', async () => {
      // Whoever holds node-a's old token (its agent, or a thief of it) learns nothing newer.
      await beat('node-a', bearer(tokenOf('node-a', PREVIOUS))).expect(200);
      const created = await request(fleet.url)
        .post('/v1/vms')
        .set(asOperator)
        .send({ vm_type: 'web', ram_mb: 64, vcpu_count: 1 });
      expect(created.status).toBe(201);
      expect(sent).toEqual([tokenOf('node-a', PREVIOUS)]);
    });

    it('calls a node that heartbeated with its new token with the new one alone, not its old one after a 401', async () => {
      await beat('node-a', bearer(tokenOf('node-a'))).expect(200);
      const created = await request(fleet.url)
        .post('/v1/vms')
        .set(asOperator)
        .send({ vm_type: 'web', ram_mb: 64, vcpu_count: 1, preferred_node: 'node-a' });
      expect(created.status).toBe(502);
      expect(created.body.message).toContain('answered 401');
      expect(sent).toEqual([tokenOf('node-a')]);
    });
  });
});

describe("an agent holding its own node's token", () => {
  let agent: RunningVmHost;

  beforeAll(async () => {
    agent = await startVmHostApp({
      VM_NODE_ID: 'node-a',
      VM_FLEET_NODE_TOKEN: tokenOf('node-a'),
      VM_BASE_IMAGE: '/nonexistent/ppn-node-identity-base.qcow2',
    });
  });

  afterAll(() => agent.close());

  it.each([
    ["node B's token", () => tokenOf('node-b')],
    ['the fleet secret', () => SECRET],
    ['its own token under another secret', () => tokenOf('node-a', PREVIOUS)],
  ])('refuses %s on every route (401)', async (_what, token) => {
    for (const send of [
      () => request(agent.url).get('/v1/vms'),
      () =>
        request(agent.url).post('/v1/spawn').send({ vm_type: 'web', ram_mb: 64, vcpu_count: 1 }),
      () => request(agent.url).delete('/v1/vms/vm-0123456789abcdef'),
    ]) {
      const refused = await send().set(bearer(token()));
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toMatch(/^Bearer realm="service-vm-host"/);
    }
  });

  it("lets its own node's token in", async () => {
    await request(agent.url)
      .get('/v1/vms')
      .set(bearer(tokenOf('node-a')))
      .expect(200, []);
  });
});
