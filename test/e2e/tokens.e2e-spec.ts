import request from 'supertest';
import { renderFleetDocument, renderVmHostDocument } from '../../openapi/documents';
import { FleetConfigError } from '../../apps/fleet/src/config/fleet.config';
import { loadFleetConfig } from '../../apps/fleet/src/config/fleet-config.load';
import { FakeClock } from '../support/fake-clock';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { RunningVmHost, startVmHostApp } from '../support/vm-host-app';

/**
 * The controller's two tokens, over HTTP against the real app: every route with no token, a
 * wrong one, the other role's one and its own. The node is a real agent app in this process,
 * holding the same node token, so dispatch shows what the controller sends to agents.
 */
const NODE_TOKEN = 'node-token-3f9a1c7e5b2d4860';
const API_TOKEN = 'api-token-8c1e6a0b4f7d2953';
const WRONG_TOKEN = 'not-a-token-of-this-fleet';
const TOKENS = { VM_FLEET_NODE_TOKEN: NODE_TOKEN, VM_FLEET_API_TOKEN: API_TOKEN };
const VM_ID = 'vm-0123456789abcdef';

type Credential = 'no' | 'a wrong' | "the other role's" | 'its own';
type Role = 'node' | 'api';

function authorization(role: Role, credential: Credential): Record<string, string> {
  const own = role === 'node' ? NODE_TOKEN : API_TOKEN;
  const other = role === 'node' ? API_TOKEN : NODE_TOKEN;
  const token = {
    no: undefined,
    'a wrong': WRONG_TOKEN,
    "the other role's": other,
    'its own': own,
  }[credential];
  return token === undefined ? {} : { Authorization: `Bearer ${token}` };
}

describe('fleet controller with VM_FLEET_NODE_TOKEN and VM_FLEET_API_TOKEN', () => {
  let fleet: RunningFleet;
  let agent: RunningVmHost;

  beforeEach(async () => {
    // The agent's clock is the machine's: the controller's agrees, or every spawn is past its deadline.
    fleet = await startFleet({ env: TOKENS, clock: new FakeClock(Date.now()) });
    // A missing base image: a spawn that passes the agent's guard answers 503 and starts nothing.
    agent = await startVmHostApp({
      VM_FLEET_NODE_TOKEN: NODE_TOKEN,
      VM_BASE_IMAGE: '/nonexistent/ppn-tokens-base.qcow2',
    });
    await enroll().expect(200);
  });

  afterEach(async () => {
    await agent.close();
    await fleet.close();
  });

  function enroll(
    headers: Record<string, string> = { Authorization: `Bearer ${NODE_TOKEN}` },
    hostname = 'host-n1',
  ) {
    return request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .set(headers)
      .send(heartbeat({ node_id: 'n1', hostname, spawn_port: agent.port, vms: [vmRecord(VM_ID)] }));
  }

  const asOperator = { Authorization: `Bearer ${API_TOKEN}` };

  const routes: Array<{
    route: string;
    role: Role;
    send: (headers: Record<string, string>) => request.Test;
    /** What the right token gets: the route's own answer. */
    allowed: (response: request.Response) => void | Promise<void>;
  }> = [
    {
      route: 'POST /v1/nodes/heartbeat',
      role: 'node',
      send: (headers) => enroll(headers, 'host-n1-renamed'),
      allowed: async (response) => {
        expect(response.status).toBe(200);
        const node = await request(fleet.url).get('/v1/nodes/n1').set(asOperator).expect(200);
        expect(node.body.hostname).toBe('host-n1-renamed');
      },
    },
    {
      route: 'GET /v1/fleet',
      role: 'api',
      send: (headers) => request(fleet.url).get('/v1/fleet').set(headers),
      allowed: (response) => {
        expect(response.status).toBe(200);
        expect(response.body.nodes.map((node: { node_id: string }) => node.node_id)).toEqual([
          'n1',
        ]);
      },
    },
    {
      route: 'GET /v1/nodes',
      role: 'api',
      send: (headers) => request(fleet.url).get('/v1/nodes').set(headers),
      allowed: (response) => {
        expect(response.status).toBe(200);
        expect(response.body).toHaveLength(1);
      },
    },
    {
      route: 'GET /v1/nodes/:node_id',
      role: 'api',
      send: (headers) => request(fleet.url).get('/v1/nodes/n1').set(headers),
      allowed: (response) => expect(response.body).toMatchObject({ node_id: 'n1', vm_count: 1 }),
    },
    {
      route: 'GET /v1/vms',
      role: 'api',
      send: (headers) => request(fleet.url).get('/v1/vms').set(headers),
      allowed: (response) =>
        expect(response.body.map((vm: { vm_id: string }) => vm.vm_id)).toEqual([VM_ID]),
    },
    {
      route: 'POST /v1/vms',
      role: 'api',
      send: (headers) =>
        request(fleet.url)
          .post('/v1/vms')
          .set(headers)
          .send({ vm_type: 'web', ram_mb: 64, vcpu_count: 1 }),
      // Placed on n1 and dispatched with the node token: the agent let it in and answered
      // that it has no base image.
      allowed: (response) => {
        expect(response.status).toBe(502);
        expect(response.body.message).toContain('VM_BASE_IMAGE');
        expect(response.body.message).not.toContain('401');
      },
    },
    {
      route: 'DELETE /v1/vms/:vm_id',
      role: 'api',
      send: (headers) => request(fleet.url).delete(`/v1/vms/${VM_ID}`).set(headers),
      // The agent, asked with the node token, has no such VM: the record goes, 204.
      allowed: (response) => expect(response.status).toBe(204),
    },
  ];

  describe.each(routes)('$route', ({ role, send, allowed }) => {
    it.each<Credential>(['no', 'a wrong', "the other role's"])(
      'with %s token: 401 with a Bearer challenge, naming the token, changing nothing',
      async (credential) => {
        const before = await request(fleet.url).get('/v1/nodes/n1').set(asOperator).expect(200);
        const response = await send(authorization(role, credential));
        expect(response.status).toBe(401);
        expect(response.headers['www-authenticate']).toBe(
          credential === 'no'
            ? 'Bearer realm="service-vm-fleet"'
            : 'Bearer realm="service-vm-fleet", error="invalid_token"',
        );
        expect(response.body).toEqual({
          statusCode: 401,
          error: 'Unauthorized',
          message: expect.stringContaining(
            role === 'node' ? 'VM_FLEET_NODE_TOKEN' : 'VM_FLEET_API_TOKEN',
          ),
        });
        for (const token of [NODE_TOKEN, API_TOKEN, WRONG_TOKEN]) {
          expect(response.text).not.toContain(token);
        }
        const after = await request(fleet.url).get('/v1/nodes/n1').set(asOperator).expect(200);
        expect(after.body).toEqual(before.body);
        const listed = await request(fleet.url).get('/v1/vms').set(asOperator).expect(200);
        expect(listed.body.map((vm: { vm_id: string }) => vm.vm_id)).toEqual([VM_ID]);
      },
    );

    it('with its own token: answered as without tokens', async () => {
      await allowed(await send(authorization(role, 'its own')));
    });
  });

  it('refuses a token sent other than as a Bearer credential', async () => {
    for (const header of [
      `Basic ${Buffer.from(`ops:${API_TOKEN}`).toString('base64')}`,
      API_TOKEN,
      `Bearer ${API_TOKEN} extra`,
    ]) {
      const response = await request(fleet.url).get('/v1/nodes').set('Authorization', header);
      expect(response.status).toBe(401);
      expect(response.body.message).toContain('Authorization: Bearer <VM_FLEET_API_TOKEN>');
    }
    await request(fleet.url)
      .get('/v1/nodes')
      .set('Authorization', `bearer  ${API_TOKEN}`)
      .expect(200);
  });

  it('does not enroll a node whose heartbeat lacks the node token', async () => {
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: 'intruder', spawn_port: agent.port }))
      .expect(401);
    await request(fleet.url).get('/v1/nodes/intruder').set(asOperator).expect(404);
  });

  it('keeps Swagger UI and the OpenAPI document readable without a token', async () => {
    const ui = await request(fleet.url).get('/docs/').expect(200);
    expect(ui.text).toContain('swagger');
    const document = await request(fleet.url).get('/docs-json').expect(200);
    expect(Object.keys(document.body.components.securitySchemes).sort()).toEqual([
      'api-token',
      'node-token',
    ]);
  });
});

describe('fleet controller with one of the two tokens', () => {
  let fleet: RunningFleet;

  afterEach(() => fleet.close());

  it('with only VM_FLEET_NODE_TOKEN: heartbeats need it, operator routes stay open', async () => {
    fleet = await startFleet({ env: { VM_FLEET_NODE_TOKEN: NODE_TOKEN } });
    const beat = heartbeat({ node_id: 'n1' });
    await request(fleet.url).post('/v1/nodes/heartbeat').send(beat).expect(401);
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .set('Authorization', `Bearer ${NODE_TOKEN}`)
      .send(beat)
      .expect(200);
    await request(fleet.url).get('/v1/nodes/n1').expect(200);
    await request(fleet.url).get('/v1/vms').expect(200);
    // Swagger UI shows a lock on the heartbeat alone, and offers the node token alone.
    const { body } = await request(fleet.url).get('/docs-json').expect(200);
    expect(securedOperations(body)).toEqual(['post /v1/nodes/heartbeat']);
    expect(Object.keys(body.components.securitySchemes)).toEqual(['node-token']);
  });

  it('with only VM_FLEET_API_TOKEN: operator routes need it, heartbeats stay open', async () => {
    fleet = await startFleet({ env: { VM_FLEET_API_TOKEN: API_TOKEN } });
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: 'n1' }))
      .expect(200);
    await request(fleet.url).get('/v1/nodes/n1').expect(401);
    await request(fleet.url).get('/v1/nodes/n1').set(asOperatorHeader()).expect(200);
    const { body } = await request(fleet.url).get('/docs-json').expect(200);
    expect(securedOperations(body)).not.toContain('post /v1/nodes/heartbeat');
    expect(securedOperations(body)).toHaveLength(6);
    expect(Object.keys(body.components.securitySchemes)).toEqual(['api-token']);
  });

  /** The operations of a served document that carry a security requirement. */
  function securedOperations(document: {
    paths: Record<string, Record<string, { security?: unknown }>>;
  }): string[] {
    return Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([, operation]) => operation.security !== undefined)
        .map(([method]) => `${method} ${path}`),
    );
  }

  function asOperatorHeader(): Record<string, string> {
    return { Authorization: `Bearer ${API_TOKEN}` };
  }
});

describe('controller and agent holding different node tokens', () => {
  it('the agent refuses the dispatch: 502 naming the 401, and no VM is recorded', async () => {
    const fleet = await startFleet({ env: TOKENS });
    const agent = await startVmHostApp({ VM_FLEET_NODE_TOKEN: 'another-fleets-node-token' });
    try {
      await request(fleet.url)
        .post('/v1/nodes/heartbeat')
        .set('Authorization', `Bearer ${NODE_TOKEN}`)
        .send(heartbeat({ node_id: 'n1', spawn_port: agent.port }))
        .expect(200);
      const response = await request(fleet.url)
        .post('/v1/vms')
        .set('Authorization', `Bearer ${API_TOKEN}`)
        .send({ vm_type: 'web', ram_mb: 64, vcpu_count: 1 })
        .expect(502);
      expect(response.body.message).toContain('n1');
      expect(response.body.message).toContain('401');
      expect(response.text).not.toContain(NODE_TOKEN);
      const vms = await request(fleet.url)
        .get('/v1/vms')
        .set('Authorization', `Bearer ${API_TOKEN}`)
        .expect(200);
      expect(vms.body).toEqual([]);
    } finally {
      await agent.close();
      await fleet.close();
    }
  });
});

describe('token configuration of the controller', () => {
  it('refuses the same value for both tokens: agents would be operators', () => {
    expect(() =>
      loadFleetConfig({ VM_FLEET_NODE_TOKEN: NODE_TOKEN, VM_FLEET_API_TOKEN: NODE_TOKEN }),
    ).toThrow(new FleetConfigError('VM_FLEET_API_TOKEN must differ from VM_FLEET_NODE_TOKEN'));
  });

  it.each(['VM_FLEET_NODE_TOKEN', 'VM_FLEET_API_TOKEN'])(
    'refuses a 10-character %s, naming it but not its value',
    (variable) => {
      expect(() => loadFleetConfig({ [variable]: 'tenchars10' })).toThrow(
        new RegExp(`^${variable} must be 16 to 1024 characters`),
      );
      expect(() => loadFleetConfig({ [variable]: 'tenchars10' })).not.toThrow(/tenchars10/);
    },
  );
});

describe('OpenAPI documents', () => {
  it.each([
    ['fleet', renderFleetDocument, 'api-token'],
    ['vm-host', renderVmHostDocument, 'node-token'],
  ] as const)(
    'the %s document puts every operation behind a bearer scheme, with its 401',
    async (_name, render, operatorScheme) => {
      const document = JSON.parse(await render());
      const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
        Object.entries(methods as Record<string, object>).map(([method, operation]) => ({
          route: `${method.toUpperCase()} ${path}`,
          ...(operation as { security: object[]; responses: Record<string, unknown> }),
        })),
      );
      for (const operation of operations) {
        const scheme =
          operation.route === 'POST /v1/nodes/heartbeat' ? 'node-token' : operatorScheme;
        expect({ route: operation.route, security: operation.security }).toEqual({
          route: operation.route,
          security: [{ [scheme]: [] }, {}],
        });
        expect(operation.responses['401']).toBeDefined();
        expect(document.components.securitySchemes[scheme]).toMatchObject({
          type: 'http',
          scheme: 'bearer',
        });
      }
    },
  );
});
