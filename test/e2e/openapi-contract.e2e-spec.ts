import { ConflictException } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { EXAMPLE_NODE_ID, EXAMPLE_VM_ID, NodeRecord } from '@app/fleet-domain';
import { NodesService } from '../../apps/fleet/src/nodes/nodes.service';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { OpenApiContract } from '../support/openapi-contract';
import { RunningVmHost, startVmHostApp } from '../support/vm-host-app';

interface Media {
  example?: unknown;
  examples?: Record<string, { value: unknown }>;
}
interface Document {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, Media> }> }>
  >;
}

function committed(file: string): Document {
  return JSON.parse(readFileSync(join(__dirname, '../../openapi', file), 'utf8')) as Document;
}

const FLEET = committed('fleet.openapi.json');
const VM_HOST = committed('vm-host.openapi.json');

/** The body a document shows for an operation's status: its example, or the named one. */
function documented(document: Document, operation: string, status: number, name?: string): unknown {
  const [method, path] = operation.split(' ');
  const media = document.paths[path][method.toLowerCase()].responses[status].content?.[
    'application/json'
  ] as Media;
  return name === undefined ? media.example : media.examples?.[name]?.value;
}

const NODE: NodeRecord = {
  node_id: EXAMPLE_NODE_ID,
  hostname: EXAMPLE_NODE_ID,
  wg_ip: '192.0.2.10',
  ram_available_mb: 24576,
  vm_count: 0,
  kvm_available: true,
  reserved: false,
  last_heartbeat: '2026-08-06T12:00:00.123Z',
};

describe('the contract check (ajv over the committed documents)', () => {
  const fleet = OpenApiContract.committed('fleet.openapi.json');
  const answer = (method: string, url: string, status: number, body?: unknown) =>
    fleet.problems({
      method,
      url,
      status,
      contentType: body === undefined ? undefined : 'application/json; charset=utf-8',
      body: body === undefined ? '' : JSON.stringify(body),
    });

  it('accepts what the document declares', () => {
    expect(answer('GET', `/v1/nodes/${EXAMPLE_NODE_ID}`, 200, NODE)).toEqual([]);
    expect(
      answer('GET', '/v1/fleet', 200, { nodes: [NODE], last_updated: NODE.last_heartbeat }),
    ).toEqual([]);
    expect(answer('POST', '/v1/nodes/heartbeat', 200, { accepted: true })).toEqual([]);
    expect(answer('DELETE', `/v1/vms/${EXAMPLE_VM_ID}`, 204)).toEqual([]);
    // OpenAPI 3.0 nullable: started_at and tenant_id may be null.
    const vm = {
      ...vmRecord(EXAMPLE_VM_ID),
      started_at: null,
      tenant_id: null,
      node_id: EXAMPLE_NODE_ID,
    };
    expect(answer('GET', '/v1/vms?tenant_id=example-tenant', 200, [vm])).toEqual([]);
  });

  it('fails a status the operation does not declare', () => {
    expect(
      answer('GET', '/v1/fleet', 404, { statusCode: 404, error: 'Not Found', message: 'x' }),
    ).toEqual([
      'GET /v1/fleet answered 404, a status fleet.openapi.json does not declare (it declares 200, 401, 403, 503)',
    ]);
  });

  it('fails a body of the wrong shape: a missing field, a wrong type, a bad format, an extra field', () => {
    const { vm_count: _missing, ...withoutCount } = NODE;
    expect(answer('GET', '/v1/nodes', 200, [withoutCount])).toEqual([
      "GET /v1/nodes answered 200 with a body fleet.openapi.json does not allow: /0 must have required property 'vm_count'",
    ]);
    expect(answer('GET', '/v1/nodes', 200, [{ ...NODE, ram_available_mb: '24576' }])).toEqual([
      'GET /v1/nodes answered 200 with a body fleet.openapi.json does not allow: /0/ram_available_mb must be integer',
    ]);
    expect(answer('GET', '/v1/nodes', 200, [{ ...NODE, last_heartbeat: 'yesterday' }])).toEqual([
      'GET /v1/nodes answered 200 with a body fleet.openapi.json does not allow: /0/last_heartbeat must match format "date-time"',
    ]);
    expect(answer('GET', '/v1/nodes', 200, [{ ...NODE, status: 'online' }])).toEqual([
      'GET /v1/nodes answered 200 with a body fleet.openapi.json does not allow: /0 must NOT have additional properties ({"additionalProperty":"status"})',
    ]);
  });

  it('requires every field a VM answer always carries, tenant_id, host_ports and node_id included', () => {
    const { tenant_id: _tenant, host_ports: _ports, ...bare } = vmRecord(EXAMPLE_VM_ID);
    expect(answer('GET', '/v1/vms', 200, [bare])).toEqual([
      "GET /v1/vms answered 200 with a body fleet.openapi.json does not allow: /0 must have required property 'tenant_id'",
      "GET /v1/vms answered 200 with a body fleet.openapi.json does not allow: /0 must have required property 'host_ports'",
      "GET /v1/vms answered 200 with a body fleet.openapi.json does not allow: /0 must have required property 'node_id'",
    ]);
  });

  it('fails a body where none is declared, and a non-JSON body where JSON is', () => {
    expect(answer('DELETE', `/v1/vms/${EXAMPLE_VM_ID}`, 204, { ok: true })).toEqual([
      'DELETE /v1/vms/{vm_id} answered 204 with a body, where fleet.openapi.json declares none: {"ok":true}',
    ]);
    expect(
      fleet.problems({
        method: 'GET',
        url: '/v1/nodes',
        status: 200,
        contentType: 'text/html',
        body: '<p>',
      }),
    ).toEqual(['GET /v1/nodes answered 200 with content-type text/html, not application/json']);
  });

  it('leaves alone what the document does not describe', () => {
    expect(answer('GET', '/docs/', 200)).toEqual([]);
    expect(answer('GET', '/healthz', 404, { statusCode: 404 })).toEqual([]);
  });
});

describe('the contract check on every response of the in-process apps', () => {
  let fleet: RunningFleet | undefined;

  afterEach(async () => {
    await fleet?.close().catch(() => undefined);
    fleet = undefined;
  });

  it('fails the test whose controller answered a body the document does not allow', async () => {
    fleet = await startFleet();
    const { vm_count: _dropped, ...drifted } = NODE;
    jest.spyOn(fleet.app.get(NodesService), 'listNodes').mockResolvedValue([drifted as NodeRecord]);
    await request(fleet.url).get('/v1/nodes').expect(200);
    const closing = fleet.close();
    fleet = undefined;
    await expect(closing).rejects.toThrow(
      "GET /v1/nodes answered 200 with a body fleet.openapi.json does not allow: /0 must have required property 'vm_count'",
    );
  });

  it('fails the test whose controller answered a status the document does not declare', async () => {
    fleet = await startFleet();
    jest
      .spyOn(fleet.app.get(NodesService), 'getNode')
      .mockRejectedValue(new ConflictException('a status no one declared'));
    await request(fleet.url).get(`/v1/nodes/${EXAMPLE_NODE_ID}`).expect(409);
    const closing = fleet.close();
    fleet = undefined;
    await expect(closing).rejects.toThrow(
      'GET /v1/nodes/{node_id} answered 409, a status fleet.openapi.json does not declare',
    );
  });
});

/**
 * Each error example the documents show is what the daemon answers, word for word: requests
 * made of the documents' own example values get exactly the documented bodies.
 */
describe('the documented error examples, as the daemons answer them', () => {
  let fleet: RunningFleet;

  beforeAll(async () => {
    fleet = await startFleet();
  });

  afterAll(async () => {
    await fleet.close();
  });

  const createBody = { vm_type: 'web', ram_mb: 2048, vcpu_count: 2 };

  it.each([
    [
      'GET /v1/nodes/{node_id}',
      404,
      undefined,
      () => request(fleet.url).get(`/v1/nodes/${EXAMPLE_NODE_ID}`),
    ],
    ['GET /v1/nodes/{node_id}', 400, '', () => request(fleet.url).get('/v1/nodes/-x')],
    ['GET /v1/vms', 400, '', () => request(fleet.url).get('/v1/vms?tenant_id=-x')],
    [
      'DELETE /v1/vms/{vm_id}',
      404,
      undefined,
      () => request(fleet.url).delete(`/v1/vms/${EXAMPLE_VM_ID}`),
    ],
    ['DELETE /v1/vms/{vm_id}', 400, 'invalid-input', () => request(fleet.url).delete('/v1/vms/-x')],
    [
      'DELETE /v1/vms/{vm_id}',
      400,
      'invalid-forget',
      () => request(fleet.url).delete(`/v1/vms/${EXAMPLE_VM_ID}?forget=yes`),
    ],
    [
      'POST /v1/vms',
      400,
      'invalid-input',
      () =>
        request(fleet.url)
          .post('/v1/vms')
          .send({ ...createBody, ram_mb: 0 }),
    ],
    [
      'POST /v1/vms',
      422,
      'preferred-node-unfit',
      () =>
        request(fleet.url)
          .post('/v1/vms')
          .send({ ...createBody, preferred_node: EXAMPLE_NODE_ID }),
    ],
    ['POST /v1/vms', 503, 'no-room', () => request(fleet.url).post('/v1/vms').send(createBody)],
    [
      'POST /v1/vms',
      413,
      undefined,
      () =>
        request(fleet.url)
          .post('/v1/vms')
          .set('Content-Type', 'application/json')
          .send(JSON.stringify({ ...createBody, padding: 'x'.repeat(1024 * 1024) })),
    ],
    [
      'POST /v1/vms',
      415,
      'encoded',
      () =>
        request(fleet.url)
          .post('/v1/vms')
          .set('Content-Type', 'application/json')
          .set('Content-Encoding', 'gzip')
          .send(JSON.stringify(createBody)),
    ],
    [
      'POST /v1/nodes/heartbeat',
      400,
      'invalid-input',
      () => {
        const { started_at: _left_out, ...vm } = vmRecord(EXAMPLE_VM_ID);
        return request(fleet.url)
          .post('/v1/nodes/heartbeat')
          .send(heartbeat({ node_id: EXAMPLE_NODE_ID, vms: [vm as never] }));
      },
    ],
  ] as const)('%s %s %s', async (operation, status, name, send) => {
    const { body } = await send().expect(status);
    expect(body).toEqual(documented(FLEET, operation, status, name || undefined));
  });

  it('shows the 409s of a VM whose node dropped out, and of forget for one whose node is back, as it answers them', async () => {
    const silent = await startFleet();
    try {
      await request(silent.url)
        .post('/v1/nodes/heartbeat')
        .send(heartbeat({ node_id: EXAMPLE_NODE_ID, vms: [vmRecord(EXAMPLE_VM_ID)] }))
        .expect(200);
      silent.clock.advance(312_000);
      const { body } = await request(silent.url).delete(`/v1/vms/${EXAMPLE_VM_ID}`).expect(409);
      expect(body).toEqual(documented(FLEET, 'DELETE /v1/vms/{vm_id}', 409, 'node-silent'));
      // Back: ?forget=true forgets nothing.
      await request(silent.url)
        .post('/v1/nodes/heartbeat')
        .send(heartbeat({ node_id: EXAMPLE_NODE_ID, vms: [vmRecord(EXAMPLE_VM_ID)] }))
        .expect(200);
      const back = await request(silent.url)
        .delete(`/v1/vms/${EXAMPLE_VM_ID}?forget=true`)
        .expect(409);
      expect(back.body).toEqual(documented(FLEET, 'DELETE /v1/vms/{vm_id}', 409, 'node-back'));
    } finally {
      await silent.close();
    }
  });

  it('shows the 401s of a controller with tokens as it answers them', async () => {
    const guarded = await startFleet({
      env: {
        VM_FLEET_NODE_TOKEN: 'node-token-for-examples',
        VM_FLEET_API_TOKEN: 'api-token-for-examples',
      },
    });
    try {
      const missing = await request(guarded.url).get('/v1/fleet').expect(401);
      expect(missing.body).toEqual(documented(FLEET, 'GET /v1/fleet', 401, 'no-token'));
      const wrong = await request(guarded.url)
        .post('/v1/nodes/heartbeat')
        .set('Authorization', 'Bearer api-token-for-examples')
        .send(heartbeat({ node_id: EXAMPLE_NODE_ID }))
        .expect(401);
      expect(wrong.body).toEqual(documented(FLEET, 'POST /v1/nodes/heartbeat', 401, 'wrong-token'));
    } finally {
      await guarded.close();
    }
  });

  describe('of the agent', () => {
    let agent: RunningVmHost;

    beforeAll(async () => {
      agent = await startVmHostApp({ VM_BASE_IMAGE: '/var/lib/vm-fleet/base.qcow2' });
    });

    afterAll(async () => {
      await agent.close();
    });

    it.each([
      [
        'DELETE /v1/vms/{vm_id}',
        404,
        undefined,
        () => request(agent.url).delete(`/v1/vms/${EXAMPLE_VM_ID}`),
      ],
      ['DELETE /v1/vms/{vm_id}', 400, '', () => request(agent.url).delete('/v1/vms/-x')],
      [
        'POST /v1/spawn',
        400,
        'invalid-input',
        () =>
          request(agent.url)
            .post('/v1/spawn')
            .send({ ...createBody, ram_mb: 0 }),
      ],
      [
        'POST /v1/spawn',
        503,
        undefined,
        () => request(agent.url).post('/v1/spawn').send(createBody),
      ],
    ] as const)('%s %s %s', async (operation, status, name, send) => {
      const { body } = await send().expect(status);
      expect(body).toEqual(documented(VM_HOST, operation, status, name || undefined));
    });
  });
});

describe('heartbeat VMs and their started_at, as the document says', () => {
  let fleet: RunningFleet;

  beforeEach(async () => {
    fleet = await startFleet();
  });

  afterEach(async () => {
    await fleet.close();
  });

  it('accepts started_at null and a VM without tenant_id or host_ports, and always answers both', async () => {
    const { tenant_id: _tenant, host_ports: _ports, ...reported } = vmRecord('vm-a');
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: 'n1', vms: [{ ...reported, started_at: null } as never] }))
      .expect(200);
    const { body } = await request(fleet.url).get('/v1/vms').expect(200);
    expect(body).toEqual([
      { ...reported, started_at: null, tenant_id: null, host_ports: [], node_id: 'n1' },
    ]);
  });

  it('refuses a VM without started_at, and enrolls nothing', async () => {
    const { started_at: _left_out, ...vm } = vmRecord('vm-a');
    const { body } = await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: 'n1', vms: [vm as never] }))
      .expect(400);
    expect(body.message).toContain('vms.0.started_at');
    await request(fleet.url).get('/v1/nodes').expect(200, []);
  });
});
