import request from 'supertest';
import { HeartbeatService } from '../../apps/vm-host/src/heartbeat/heartbeat.service';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { RunningVmHost, startVmHostApp } from '../support/vm-host-app';

/**
 * The agent's node token, over HTTP against the real agent app in this process (it starts no
 * VM: its base image is missing, so a spawn that gets past the token answers 503).
 */
const NODE_TOKEN = 'node-token-5e0b9d2a7c4f1836';
const API_TOKEN = 'api-token-1a7f3c9e5b0d2864';
const WRONG_TOKEN = 'not-a-token-of-this-fleet';
const MISSING_BASE_IMAGE = '/nonexistent/ppn-agent-tokens-base.qcow2';

const credentials: Array<[string, string | undefined]> = [
  ['no token', undefined],
  ['a wrong token', WRONG_TOKEN],
  ["the operators' API token", API_TOKEN],
];

describe('agent with VM_FLEET_NODE_TOKEN', () => {
  let agent: RunningVmHost;

  beforeAll(async () => {
    agent = await startVmHostApp({
      VM_FLEET_NODE_TOKEN: NODE_TOKEN,
      VM_BASE_IMAGE: MISSING_BASE_IMAGE,
    });
  });

  afterAll(() => agent.close());

  const routes: Array<{
    route: string;
    send: (headers: Record<string, string>) => request.Test;
    allowed: (response: request.Response) => void;
  }> = [
    {
      route: 'POST /v1/spawn',
      send: (headers) =>
        request(agent.url)
          .post('/v1/spawn')
          .set(headers)
          .send({ vm_type: 'web', ram_mb: 64, vcpu_count: 1 }),
      allowed: (response) => {
        expect(response.status).toBe(503);
        expect(response.body.message).toContain(MISSING_BASE_IMAGE);
      },
    },
    {
      route: 'GET /v1/vms',
      send: (headers) => request(agent.url).get('/v1/vms').set(headers),
      allowed: (response) => {
        expect(response.status).toBe(200);
        expect(response.body).toEqual([]);
      },
    },
    {
      route: 'DELETE /v1/vms/:vm_id',
      send: (headers) => request(agent.url).delete('/v1/vms/vm-0123456789abcdef').set(headers),
      allowed: (response) => {
        expect(response.status).toBe(404);
        expect(response.body.message).toContain('vm-0123456789abcdef');
      },
    },
  ];

  describe.each(routes)('$route', ({ send, allowed }) => {
    it.each(credentials)(
      'with %s: 401 with a Bearer challenge naming the node token',
      async (_, token) => {
        const response = await send(token ? { Authorization: `Bearer ${token}` } : {});
        expect(response.status).toBe(401);
        expect(response.headers['www-authenticate']).toBe(
          token
            ? 'Bearer realm="service-vm-host", error="invalid_token"'
            : 'Bearer realm="service-vm-host"',
        );
        expect(response.body).toEqual({
          statusCode: 401,
          error: 'Unauthorized',
          message: expect.stringContaining('VM_FLEET_NODE_TOKEN'),
        });
        for (const secret of [NODE_TOKEN, API_TOKEN, WRONG_TOKEN]) {
          expect(response.text).not.toContain(secret);
        }
      },
    );

    it('with the node token: answered as without tokens', async () => {
      allowed(await send({ Authorization: `Bearer ${NODE_TOKEN}` }));
    });
  });

  it('keeps Swagger UI readable without a token', async () => {
    await request(agent.url).get('/docs/').expect(200);
    const document = await request(agent.url).get('/docs-json').expect(200);
    expect(Object.keys(document.body.components.securitySchemes)).toEqual(['node-token']);
  });
});

describe('agent without VM_FLEET_NODE_TOKEN', () => {
  it('answers with or without any Authorization header, as the how-tos expect', async () => {
    const agent = await startVmHostApp();
    try {
      await request(agent.url).get('/v1/vms').expect(200, []);
      await request(agent.url)
        .get('/v1/vms')
        .set('Authorization', `Bearer ${WRONG_TOKEN}`)
        .expect(200, []);
    } finally {
      await agent.close();
    }
  });
});

describe("the agent's heartbeats", () => {
  let fleet: RunningFleet;

  beforeEach(async () => {
    fleet = await startFleet({
      env: { VM_FLEET_NODE_TOKEN: NODE_TOKEN, VM_FLEET_API_TOKEN: API_TOKEN },
    });
  });

  afterEach(() => fleet.close());

  async function beat(nodeToken: string): Promise<void> {
    const agent = await startVmHostApp({
      VM_FLEET_ENDPOINT: fleet.url,
      VM_NODE_ID: 'beating-node',
      VM_FLEET_NODE_TOKEN: nodeToken,
    });
    try {
      await agent.app.get(HeartbeatService).send(5_000);
    } finally {
      await agent.close();
    }
  }

  it('carry the node token: the controller enrolls the node', async () => {
    await beat(NODE_TOKEN);
    await request(fleet.url)
      .get('/v1/nodes/beating-node')
      .set('Authorization', `Bearer ${API_TOKEN}`)
      .expect(200);
  });

  it('with another node token are refused, and the reason reaches the agent', async () => {
    await expect(beat('another-fleets-node-token')).rejects.toThrow(
      'controller answered 401: the bearer token is not the node token this route needs (VM_FLEET_NODE_TOKEN)',
    );
    await request(fleet.url)
      .get('/v1/nodes/beating-node')
      .set('Authorization', `Bearer ${API_TOKEN}`)
      .expect(404);
  });
});
