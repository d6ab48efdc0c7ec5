import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { reasonPhrase, securedAsServed } from '@app/daemon';
import type { OpenAPIObject } from '@nestjs/swagger';
import request from 'supertest';
import { DEFAULT_SPAWN_PORT, EXAMPLE_VM_ID, FLEET_PORT } from '@app/fleet-domain';
import { RunningFleet, startFleet } from '../support/fleet-app';

/**
 * What the committed documents promise their readers beyond what the linters check: that
 * tools can build every request from them, that every error has its own example, and that
 * "Try it out" with their examples cannot touch a real fleet.
 */
type Json = Record<string, unknown>;

interface Operation {
  description?: string;
  tags?: string[];
  parameters?: Array<{ name: string; in: string; required?: boolean; example?: unknown }>;
  requestBody?: unknown;
  responses: Record<
    string,
    {
      content?: Record<
        string,
        { schema?: Json; example?: unknown; examples?: Record<string, { value: unknown }> }
      >;
    }
  >;
}

interface Document {
  servers: Array<{ url: string; variables?: Record<string, { default: string }> }>;
  tags?: Array<{ name: string; description?: string }>;
  info: { license?: { name: string } };
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, { properties: Record<string, Json>; required?: string[] }>;
  };
}

const DOCUMENTS: Record<string, Document> = Object.fromEntries(
  ['fleet.openapi.json', 'fleet-ops.openapi.json', 'vm-host.openapi.json'].map((file) => [
    file,
    JSON.parse(readFileSync(join(__dirname, '../../openapi', file), 'utf8')) as Document,
  ]),
);

function operations(document: Document): Array<[string, Operation]> {
  return Object.entries(document.paths).flatMap(([path, byMethod]) =>
    Object.entries(byMethod).map(
      ([method, operation]) =>
        [`${method.toUpperCase()} ${path}`, operation] as [string, Operation],
    ),
  );
}

/** Every example value in the document with the property name it stands for. */
function examples(value: unknown, key = ''): Array<[string, unknown]> {
  if (Array.isArray(value)) return value.flatMap((item) => examples(item, key));
  if (value === null || typeof value !== 'object') return [];
  const object = value as Json;
  const found: Array<[string, unknown]> = [];
  if ('example' in object) found.push(...leaves(object.example, key));
  if (typeof object.name === 'string' && 'example' in object)
    found.push([object.name, object.example]);
  for (const [child, inner] of Object.entries(object)) {
    if (child === 'example') continue;
    if (child === 'examples' && typeof inner === 'object' && inner !== null) {
      for (const named of Object.values(inner as Record<string, { value: unknown }>)) {
        found.push(...leaves(named.value, key));
      }
      continue;
    }
    found.push(...examples(inner, child === 'properties' ? key : child));
  }
  return found;
}

/** The scalar leaves of an example body, each with its field name. */
function leaves(value: unknown, key: string): Array<[string, unknown]> {
  if (Array.isArray(value)) return value.flatMap((item) => leaves(item, key));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([child, inner]) => leaves(inner, child));
  }
  return [[key, value]];
}

/** RFC 5737 (IPv4) and RFC 3849 (IPv6) documentation addresses: never a real node. */
function isDocumentationAddress(ip: string): boolean {
  return /^(192\.0\.2|198\.51\.100|203\.0\.113)\.\d{1,3}$/.test(ip) || /^2001:db8:/i.test(ip);
}

/** The schema of a VM in each daemon's answers: the controller adds the node it runs on. */
const ANSWERED_VM: Record<string, string> = {
  'fleet.openapi.json': 'FleetVm',
  'fleet-ops.openapi.json': 'FleetVmWithLifeCycle',
  'vm-host.openapi.json': 'VmRecord',
};

describe.each(Object.keys(DOCUMENTS))('the committed %s', (file) => {
  const document = DOCUMENTS[file];
  const all = operations(document);

  it('describes every operation and every tag it uses, and names its licence', () => {
    const described = new Set(
      (document.tags ?? []).filter((tag) => tag.description).map((tag) => tag.name),
    );
    expect(all.filter(([, operation]) => !operation.description).map(([name]) => name)).toEqual([]);
    expect(
      all.flatMap(([, operation]) => operation.tags ?? []).filter((tag) => !described.has(tag)),
    ).toEqual([]);
    expect(document.info.license?.name).toContain('UNLICENSED');
  });

  it('gives every required parameter its own example, so tools can build each request', () => {
    const required = all.flatMap(([name, operation]) =>
      (operation.parameters ?? [])
        .filter((parameter) => parameter.required)
        .map((parameter) => ({ name, parameter: parameter.name, example: parameter.example })),
    );
    expect(required.length).toBeGreaterThan(0);
    expect(required.filter(({ example }) => typeof example !== 'string')).toEqual([]);
  });

  it('shows each error status with its own examples, whose status and reason are that status', () => {
    const wrong: unknown[] = [];
    let checked = 0;
    for (const [name, operation] of all) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400) continue;
        const media = response.content?.['application/json'];
        const bodies = [
          ...(media?.example === undefined ? [] : [media.example]),
          ...Object.values(media?.examples ?? {}).map((example) => example.value),
        ];
        if (media?.schema?.$ref !== '#/components/schemas/ErrorBody' || bodies.length === 0) {
          wrong.push({ name, status, problem: 'no ErrorBody schema with examples' });
        }
        for (const body of bodies) {
          checked += 1;
          const { statusCode, error, message } = body as Record<string, unknown>;
          if (statusCode !== Number(status) || error !== reasonPhrase(Number(status)) || !message) {
            wrong.push({ name, status, body });
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(0);
    expect(wrong).toEqual([]);
  });

  it('declares 400, 413 and 415 wherever a JSON body is read', () => {
    const withBody = all.filter(([, operation]) => operation.requestBody);
    expect(withBody.length).toBeGreaterThan(0);
    for (const [name, operation] of withBody) {
      expect({ name, statuses: Object.keys(operation.responses) }).toEqual({
        name,
        statuses: expect.arrayContaining(['400', '413', '415']),
      });
    }
  });

  it('uses example values no real fleet has, so "Try it out" cannot touch a node', () => {
    const values = examples(document);
    const named = (...fields: string[]): unknown[] =>
      values.filter(([field]) => fields.includes(field)).map(([, value]) => value);
    const text = (value: unknown): string =>
      typeof value === 'string' ? value : JSON.stringify(value);
    const nodeIds = named('node_id', 'hostname', 'preferred_node').filter((id) => id !== null);
    const addresses = named('wg_ip');
    expect(nodeIds.length + named('vm_id').length).toBeGreaterThan(0);
    expect(nodeIds.filter((id) => !text(id).startsWith('example-'))).toEqual([]);
    // The one example VM id, in the real vm-<16 hex> form, made by no agent (ids are random).
    expect(named('vm_id').filter((id) => id !== EXAMPLE_VM_ID)).toEqual([]);
    expect(EXAMPLE_VM_ID).toMatch(/^vm-[0-9a-f]{16}$/);
    expect(addresses.filter((ip) => !isDocumentationAddress(text(ip)))).toEqual([]);
    expect(named('spawn_port').filter((port) => port !== DEFAULT_SPAWN_PORT)).toEqual([]);
    // Messages name only example nodes and addresses too.
    expect(named('message').filter((message) => /compute-|10\.8\./.test(text(message)))).toEqual(
      [],
    );
  });

  it('requires every field of the VMs its answers show, which every answer carries', () => {
    const vm = document.components.schemas[ANSWERED_VM[file]];
    // Only a VM whose node has dropped out carries when it fell silent; only one whose copies the
    // controller tracks (its agent reports a copy policy, or a node holds a copy) its copy fields.
    const onlyWhenSilent =
      file === 'vm-host.openapi.json' ? [] : ['node_silent_since', 'copied_at', 'copy_node_id'];
    expect([...(vm.required ?? []), ...onlyWhenSilent].sort()).toEqual(
      Object.keys(vm.properties).sort(),
    );
  });
});

describe('the committed fleet-ops.openapi.json', () => {
  const document = DOCUMENTS['fleet-ops.openapi.json'];

  it('shows every VM as the API does, with its life cycle, null when unknown', () => {
    const { FleetVm: apiVm } = DOCUMENTS['fleet.openapi.json'].components.schemas;
    const withLifeCycle = document.components.schemas.FleetVmWithLifeCycle;
    expect(withLifeCycle.properties).toEqual({
      ...apiVm.properties,
      life_cycle: expect.objectContaining({
        allOf: [{ $ref: '#/components/schemas/VmLifeCycle' }],
        nullable: true,
      }),
    });
    expect(withLifeCycle.required).toContain('life_cycle');
  });

  it('declares the 503 of a shared store that is down, and the 502 of an agent, on every action', () => {
    for (const [name, operation] of operations(document)) {
      expect({ name, statuses: Object.keys(operation.responses) }).toEqual({
        name,
        statuses: expect.arrayContaining(
          // declare-dead and undrain ask no agent: they only mark the node in the store; a drain
          // answers each move's failure in its outcomes.
          (name.startsWith('POST') && !/\/(declare-dead|drain|undrain)$/.test(name)) ||
            name.endsWith('/console')
            ? ['401', '502', '503']
            : ['401', '503'],
        ),
      });
    }
  });
});

describe('the committed fleet.openapi.json', () => {
  const document = DOCUMENTS['fleet.openapi.json'];

  it(`names the controller's base URL, port ${FLEET_PORT}`, () => {
    expect(document.servers).toEqual([
      expect.objectContaining({
        url: `http://{controller}:${FLEET_PORT}`,
        variables: { controller: expect.objectContaining({ default: expect.any(String) }) },
      }),
    ]);
  });

  it('declares the 503 of a shared store that is down on every route', () => {
    for (const [name, operation] of operations(document)) {
      const media = operation.responses['503']?.content?.['application/json'];
      const messages = [
        media?.example,
        ...Object.values(media?.examples ?? {}).map((example) => example.value),
      ].map((body) => (body as { message?: string } | undefined)?.message);
      expect({ name, messages }).toEqual({
        name,
        messages: expect.arrayContaining([expect.stringContaining('fleet state store')]),
      });
    }
  });

  it("shows every VM of GET /v1/vms and of a create's answer with the node it runs on", () => {
    const { VmRecord: agentVm } = DOCUMENTS['vm-host.openapi.json'].components.schemas;
    const fleetVm = document.components.schemas.FleetVm;
    // Additive: the agent's VmRecord, field for field, node_id, for a VM of a node that has
    // dropped out, since when, and for a VM whose copies are tracked, its freshest copy.
    expect(fleetVm.properties).toEqual({
      ...agentVm.properties,
      node_id: expect.objectContaining({ type: 'string' }),
      node_silent_since: expect.objectContaining({ type: 'string', format: 'date-time' }),
      copied_at: expect.objectContaining({ type: 'string', format: 'date-time', nullable: true }),
      copy_node_id: expect.objectContaining({ type: 'string', nullable: true }),
    });
    expect(fleetVm.required).toContain('node_id');
    for (const optional of ['node_silent_since', 'copied_at', 'copy_node_id']) {
      expect(fleetVm.required).not.toContain(optional);
    }
    const vms = document.paths['/v1/vms'];
    const schemaOf = (operation: Operation, status: string) =>
      operation.responses[status].content?.['application/json'].schema;
    expect(schemaOf(vms.get, '200')).toEqual({
      type: 'array',
      items: { $ref: '#/components/schemas/FleetVm' },
    });
    for (const status of ['200', '201']) {
      expect(schemaOf(vms.post, status)).toEqual({ $ref: '#/components/schemas/FleetVm' });
    }
  });

  it('lets heartbeat VMs leave out tenant_id and host_ports, but never started_at', () => {
    const reported = document.components.schemas.HeartbeatVm;
    expect(reported.required).toEqual(expect.arrayContaining(['started_at']));
    expect(reported.required).not.toEqual(expect.arrayContaining(['tenant_id']));
    expect(reported.required).not.toEqual(expect.arrayContaining(['host_ports']));
    expect(reported.properties.started_at).toMatchObject({ nullable: true, format: 'date-time' });
  });
});

describe('the committed vm-host.openapi.json', () => {
  it("names an agent's base URL, its WireGuard address and spawn port (9204 by default)", () => {
    expect(DOCUMENTS['vm-host.openapi.json'].servers).toEqual([
      expect.objectContaining({
        url: 'http://{wg_ip}:{spawn_port}',
        variables: {
          wg_ip: expect.objectContaining({ default: expect.any(String) }),
          spawn_port: expect.objectContaining({ default: String(DEFAULT_SPAWN_PORT) }),
        },
      }),
    ]);
  });
});

describe('the document a controller serves beside Swagger UI', () => {
  let fleet: RunningFleet;

  beforeAll(async () => {
    fleet = await startFleet();
  });

  afterAll(async () => {
    await fleet.close();
  });

  it('is the committed one, with "Try it out" going first to the daemon that served it', async () => {
    const { body } = await request(fleet.url).get('/docs-json').expect(200);
    const { servers, ...rest } = body as Document;
    const { servers: committedServers, ...committed } = DOCUMENTS['fleet.openapi.json'];
    expect(servers).toEqual([expect.objectContaining({ url: '/' }), ...committedServers]);
    // This controller has no token: it shows none of the committed security (no lock in
    // Swagger UI), and is otherwise the committed document.
    expect(rest).toEqual(securedAsServed(committed as unknown as OpenAPIObject, () => false));
    const operations = Object.values(body.paths as Record<string, Record<string, object>>).flatMap(
      (item) => Object.values(item),
    );
    expect(operations.filter((operation) => 'security' in operation)).toEqual([]);
    expect((body as Document & { components: object }).components).not.toHaveProperty(
      'securitySchemes',
    );
  });
});
