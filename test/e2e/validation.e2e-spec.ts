import { gzipSync } from 'node:zlib';
import request from 'supertest';
import { MAX_BODY_BYTES, MAX_VMS_PER_HEARTBEAT } from '@app/fleet-domain';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord, NODE_RECORD_FIELDS } from '../support/heartbeats';

describe('fleet controller: input that is accepted', () => {
  let fleet: RunningFleet;

  beforeEach(async () => {
    fleet = await startFleet();
  });

  afterEach(async () => {
    await fleet.close();
  });

  it('accepts nanosecond timestamps and offsets as the original agent sends them', async () => {
    const sent = heartbeat({ node_id: 'n2', timestamp_utc: '2026-08-06T12:00:00.123456789+02:00' });
    await request(fleet.url).post('/v1/nodes/heartbeat').send(sent).expect(200);
    await request(fleet.url).get('/v1/nodes/n2').expect(200);
  });

  it('ignores unknown extra fields, so newer agents still enroll', async () => {
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send({ ...heartbeat({ node_id: 'n1' }), gpu_count: 2, labels: { zone: 'a' } })
      .expect(200);
    const { body } = await request(fleet.url).get('/v1/nodes/n1').expect(200);
    expect(Object.keys(body).sort()).toEqual(NODE_RECORD_FIELDS);
  });

  it('takes reserved as optional, false when absent or null', async () => {
    const { reserved: _omitted, ...withoutReserved } = heartbeat({ node_id: 'n3' });
    await request(fleet.url).post('/v1/nodes/heartbeat').send(withoutReserved).expect(200);
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send({ ...heartbeat({ node_id: 'n4' }), reserved: null })
      .expect(200);
    const { body } = await request(fleet.url).get('/v1/nodes').expect(200);
    expect(body.map((node: { reserved: boolean }) => node.reserved)).toEqual([false, false]);
  });
});

describe('fleet controller: bad input', () => {
  let fleet: RunningFleet;
  let before: unknown;

  beforeAll(async () => {
    fleet = await startFleet();
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send(heartbeat({ node_id: 'n1', vms: [vmRecord('vm-1', { tenant_id: 'acme' })] }))
      .expect(200);
    before = (await request(fleet.url).get('/v1/fleet')).body;
  });

  afterAll(async () => {
    await fleet.close();
  });

  afterEach(async () => {
    // Whatever was refused, the fleet is as it was.
    expect((await request(fleet.url).get('/v1/fleet')).body).toEqual(before);
  });

  const good = heartbeat({ node_id: 'n1', ram_used_mb: 1 });

  it.each<[string, Record<string, unknown>]>([
    ['node_id', { node_id: '' }],
    ['node_id', { node_id: '-leading-dash' }],
    ['node_id', { node_id: 'a'.repeat(129) }],
    ['node_id', { node_id: 'has space' }],
    ['node_id', { node_id: undefined }],
    ['wg_ip', { wg_ip: 42 }],
    ['hostname', { hostname: undefined }],
    ['ram_total_mb', { ram_total_mb: '16384' }],
    ['ram_total_mb', { ram_total_mb: 1.5 }],
    ['ram_used_mb', { ram_used_mb: -1 }],
    ['cpu_cores', { cpu_cores: null }],
    ['cpu_load_pct', { cpu_load_pct: 100.5 }],
    ['cpu_load_pct', { cpu_load_pct: -0.1 }],
    ['kvm_available', { kvm_available: 'yes' }],
    ['reserved', { reserved: 'false' }],
    ['vms', { vms: undefined }],
    ['vms', { vms: {} }],
    ['vms.0.state', { vms: [vmRecord('vm-1', { state: 'Exploded' as never })] }],
    ['vms.0.vm_id', { vms: [vmRecord('../etc')] }],
    [
      'vms.1.host_ports.0.host_port',
      {
        vms: [
          vmRecord('a'),
          vmRecord('b', { host_ports: [{ host_port: 0, guest_port: 22, protocol: 'tcp' }] }),
        ],
      },
    ],
    ['boot_id', { boot_id: undefined }],
    ['timestamp_utc', { timestamp_utc: '2026-08-06 noon' }],
    ['timestamp_utc', { timestamp_utc: '2026-08-06T12:00:00' }],
    ['spawn_port', { spawn_port: 70000 }],
  ])('refuses a heartbeat with a bad %s (400 naming it)', async (field, change) => {
    const { body } = await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .send({ ...good, ...change })
      .expect(400);
    expect(body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    expect(body.message).toContain(field);
  });

  it('answers malformed JSON with 400 JSON', async () => {
    const { body } = await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .set('content-type', 'application/json')
      .send('{"node_id": "n1",')
      .expect(400);
    expect(body).toMatchObject({ statusCode: 400, message: expect.stringContaining('JSON') });
  });

  it('answers a body over 1 MiB with 413 JSON', async () => {
    const { body } = await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .set('content-type', 'application/json')
      .send(JSON.stringify({ ...good, hostname: 'x'.repeat(1024 * 1024) }))
      .expect(413);
    expect(body).toMatchObject({ statusCode: 413, message: expect.stringContaining('1 MiB') });
  });

  it.each<[string, Record<string, unknown>]>([
    ['vm_type', { vm_type: '../x' }],
    ['vm_type', { vm_type: 'a'.repeat(64) }],
    ['vm_type', { vm_type: 'under_score' }],
    ['ram_mb', { ram_mb: 0 }],
    ['ram_mb', { ram_mb: -512 }],
    ['ram_mb', { ram_mb: '512' }],
    ['vcpu_count', { vcpu_count: 0 }],
    ['vcpu_count', { vcpu_count: 1.5 }],
    ['prefer_kvm', { prefer_kvm: 'yes' }],
    ['preferred_node', { preferred_node: '../n1' }],
    ['tenant_id', { tenant_id: 'a b' }],
  ])('refuses a create with a bad %s (400 naming it)', async (field, change) => {
    const { body } = await request(fleet.url)
      .post('/v1/vms')
      .send({ vm_type: 'web', ram_mb: 512, vcpu_count: 1, ...change })
      .expect(400);
    expect(body.message).toContain(field);
  });

  it('refuses bad ids in paths and queries (400 naming them)', async () => {
    expect((await request(fleet.url).get('/v1/nodes/..').expect(400)).body.message).toContain(
      'node_id',
    );
    expect(
      (
        await request(fleet.url)
          .get(`/v1/nodes/${'a'.repeat(129)}`)
          .expect(400)
      ).body.message,
    ).toContain('node_id');
    expect((await request(fleet.url).delete('/v1/vms/-x').expect(400)).body.message).toContain(
      'vm_id',
    );
    expect(
      (await request(fleet.url).get('/v1/vms?tenant_id=a%20b').expect(400)).body.message,
    ).toContain('tenant_id');
  });
});

/**
 * Input an attacker on the fleet network would send: refused with a short 4xx naming the field,
 * or accepted, never a 500 and never a change it should not make. With real processes:
 * attacks.system-spec.ts.
 */
describe('fleet controller: hostile input', () => {
  let fleet: RunningFleet;

  beforeEach(async () => {
    fleet = await startFleet();
  });

  afterEach(async () => {
    await fleet.close();
  });

  const beat = (body: object | string) =>
    request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .set('content-type', 'application/json')
      .send(typeof body === 'string' ? body : JSON.stringify(body));

  /** The heartbeat's JSON with `raw` spliced in as the value of `field`. */
  const withRaw = (field: string, raw: string) =>
    JSON.stringify(heartbeat({ node_id: 'n1' })).slice(0, -1) + `,"${field}":${raw}}`;

  describe('bounds of every field', () => {
    it.each<[string, Record<string, unknown>]>([
      ['wg_ip', { wg_ip: '127.0.0.1/admin/reset?x=' }],
      ['wg_ip', { wg_ip: 'localhost' }],
      ['wg_ip', { wg_ip: '10.8.0.1:9204' }],
      ['wg_ip', { wg_ip: 'fe80::1%eth0' }],
      ['wg_ip', { wg_ip: '10.8.0.0/24' }],
      ['wg_ip', { wg_ip: '' }],
      ['wg_ip', { wg_ip: '0.0.0.0' }],
      ['wg_ip', { wg_ip: '::' }],
      ['wg_ip', { wg_ip: '224.0.0.1' }],
      ['wg_ip', { wg_ip: '255.255.255.255' }],
      ['wg_ip', { wg_ip: '169.254.169.254' }],
      ['wg_ip', { wg_ip: '::ffff:169.254.169.254' }],
      ['wg_ip', { wg_ip: 'fe80::1' }],
      // The same addresses in other spellings: judged as what they name.
      ['wg_ip', { wg_ip: '0:0:0:0:0:ffff:a9fe:a9fe' }],
      ['wg_ip', { wg_ip: '0::ffff:a9fe:a9fe' }],
      ['wg_ip', { wg_ip: '::169.254.169.254' }],
      ['wg_ip', { wg_ip: '0:0:0:0:0:ffff:0:0' }],
      ['wg_ip', { wg_ip: '0:0:0:0:0:0:0:0' }],
      ['ram_total_mb', { ram_total_mb: 1e308 }],
      ['ram_total_mb', { ram_total_mb: 2 ** 31 }],
      ['ram_used_mb', { ram_used_mb: 2 ** 31 }],
      ['cpu_cores', { cpu_cores: 0 }],
      ['cpu_cores', { cpu_cores: 65_536 }],
      ['hostname', { hostname: 'evil\n[Nest] 1 - LOG [Nodes] node admin joined' }],
      ['hostname', { hostname: 'bell\u0007' }],
      ['hostname', { hostname: 'admin\u202Egnp.exe' }],
      ['hostname', { hostname: 'zero\u200Bwidth' }],
      ['hostname', { hostname: 'a'.repeat(254) }],
      ['hostname', { hostname: '' }],
      ['boot_id', { boot_id: 'boot\n1' }],
      ['spawn_port', { spawn_port: 0 }],
      ['spawn_port', { spawn_port: 1.5 }],
      ['timestamp_utc', { timestamp_utc: `2026-08-06T12:00:00.${'1'.repeat(60)}Z` }],
      ['vms.0.ram_alloc_mb', { vms: [vmRecord('a', { ram_alloc_mb: 2 ** 31 })] }],
      ['vms.0.vcpu_count', { vms: [vmRecord('a', { vcpu_count: 65_536 })] }],
      ['vms.0.vm_type', { vms: [vmRecord('a', { vm_type: 'web\nx' })] }],
      ['vms.0.tenant_id', { vms: [vmRecord('a', { tenant_id: 'acme\r' })] }],
      [
        'vms.0.host_ports',
        {
          vms: [
            vmRecord('a', {
              host_ports: Array.from({ length: 65 }, () => ({
                host_port: 40000,
                guest_port: 22,
                protocol: 'tcp' as const,
              })),
            }),
          ],
        },
      ],
    ])('refuses a heartbeat with an out-of-bounds %s (400 naming it)', async (field, change) => {
      const { body } = await beat({ ...heartbeat({ node_id: 'n1' }), ...change }).expect(400);
      expect(body.message).toContain(field);
      await request(fleet.url).get('/v1/nodes').expect(200, []);
    });

    it('accepts an IPv6 wg_ip, a hostname of any printable text, and the bounds themselves', async () => {
      await beat(
        heartbeat({
          node_id: 'n6',
          wg_ip: 'fd00::21',
          hostname: 'hôte-été.example',
          ram_total_mb: 2 ** 31 - 1,
          cpu_cores: 65_535,
          spawn_port: 65_535,
          vms: Array.from({ length: MAX_VMS_PER_HEARTBEAT }, (_, index) => vmRecord(`vm-${index}`)),
        }),
      ).expect(200);
      const { body } = await request(fleet.url).get('/v1/nodes/n6').expect(200);
      expect(body).toMatchObject({
        wg_ip: 'fd00::21',
        hostname: 'hôte-été.example',
        vm_count: MAX_VMS_PER_HEARTBEAT,
      });
    });
  });

  describe('bodies built to stall the controller', () => {
    it.each<[number, string]>([
      // More arrays and objects than any heartbeat: refused before parsing.
      [100_000, 'request body holds more than 32768 arrays and objects (under field "vms")'],
      [20_000, `vms must contain no more than ${MAX_VMS_PER_HEARTBEAT} elements`],
      [
        MAX_VMS_PER_HEARTBEAT + 1,
        `vms must contain no more than ${MAX_VMS_PER_HEARTBEAT} elements`,
      ],
    ])('refuses %d empty VMs at once, naming vms, in a short answer', async (count, message) => {
      const startedAt = Date.now();
      const response = await beat(
        heartbeat({ node_id: 'n1', vms: Array.from({ length: count }, () => ({}) as never) }),
      ).expect(400);
      expect(response.body.message).toBe(message);
      expect(Date.now() - startedAt).toBeLessThan(1_000);
    });

    it('lists a few problems of 1,024 bad VMs and counts the rest, under 16 KiB', async () => {
      const response = await beat(
        heartbeat({
          node_id: 'n1',
          vms: Array.from({ length: MAX_VMS_PER_HEARTBEAT }, () => ({ vm_id: '../x' }) as never),
        }),
      ).expect(400);
      expect(response.text.length).toBeLessThan(16 * 1024);
      expect(response.body.message).toMatch(/^vms\.0\.vm_id must be .*; and \d+ more$/);
    });

    it.each<[string, string, string]>([
      ['[[[…]]] in an unknown field', 'labels', '['.repeat(400_000) + ']'.repeat(400_000)],
      [
        '{"a":{"a":…}} in hostname',
        'hostname',
        '{"a":'.repeat(150_000) + '1' + '}'.repeat(150_000),
      ],
      ['[[[…]]] in vms', 'vms', '['.repeat(400_000) + ']'.repeat(400_000)],
      ['300,000 empty arrays', 'labels', `[${Array(300_000).fill('[]').join(',')}]`],
    ])('refuses %s before parsing it (400 naming the field)', async (_what, field, raw) => {
      const { body } = await beat(withRaw(field, raw)).expect(400);
      expect(body.message).toContain(`under field "${field}"`);
    });

    it('refuses 500,000 values in one field before parsing them', async () => {
      const { body } = await beat(
        withRaw('labels', `[${Array(500_000).fill('0').join(',')}]`),
      ).expect(400);
      expect(body.message).toBe(
        'request body holds more than 131072 values (under field "labels")',
      );
    });

    it('refuses 50,000 different unknown field names', async () => {
      const names = Array.from({ length: 50_000 }, (_, index) => `"x${index}":0`).join(',');
      const { body } = await beat(
        JSON.stringify(heartbeat({ node_id: 'n1' })).slice(0, -1) + `,${names}}`,
      ).expect(400);
      expect(body.message).toContain('different field names');
    });

    it('refuses a field of the wrong kind without walking it (400 naming it)', async () => {
      const numbers = `[${Array(100_000).fill('0').join(',')}]`;
      const { body } = await beat(withRaw('ram_total_mb', numbers)).expect(400);
      expect(body.message).toContain('ram_total_mb');
      const huge = await beat(
        heartbeat({ node_id: 'n1', hostname: 'x'.repeat(MAX_BODY_BYTES - 500) }),
      ).expect(400);
      expect(huge.body.message).toContain('hostname');
      expect(huge.text.length).toBeLessThan(1024);
    });

    it('still ignores unknown fields of a reasonable size, so newer agents enroll', async () => {
      await beat(withRaw('labels', JSON.stringify({ rack: { row: [1, 2, { a: 'b' }] } }))).expect(
        200,
      );
      await request(fleet.url).get('/v1/nodes/n1').expect(200);
    });
  });

  describe('query and media types', () => {
    it.each(['tenant_id[]=acme', 'tenant_id[a]=b', 'tenant_id=acme&tenant_id=other'])(
      'refuses ?%s with a 400 naming tenant_id instead of listing every tenant',
      async (query) => {
        await beat(
          heartbeat({ node_id: 'n1', vms: [vmRecord('vm-1', { tenant_id: 'other' })] }),
        ).expect(200);
        const { body } = await request(fleet.url).get(`/v1/vms?${query}`).expect(400);
        expect(body.message).toContain('tenant_id');
      },
    );

    it.each([
      ['/v1/nodes/heartbeat', heartbeat({ node_id: 'n1' })],
      ['/v1/vms', { vm_type: 'web', ram_mb: 512, vcpu_count: 1 }],
    ])('answers 415 naming what %s cannot read', async (path, payload) => {
      const json = JSON.stringify(payload);
      const gzipped = await request(fleet.url)
        .post(path)
        .set('content-type', 'application/json')
        .set('content-encoding', 'gzip')
        .send(gzipSync(json))
        .expect(415);
      expect(gzipped.body.message).toContain('Content-Encoding gzip');
      const text = await request(fleet.url)
        .post(path)
        .set('content-type', 'text/plain')
        .send(json)
        .expect(415);
      expect(text.body.message).toContain('Content-Type text/plain');
      const form = await request(fleet.url).post(path).type('form').send({ a: 'b' }).expect(415);
      expect(form.body.message).toContain('application/x-www-form-urlencoded');
      await request(fleet.url).get('/v1/nodes').expect(200, []);
    });

    it.each(['utf-16le', 'UTF-16', 'latin1', 'utf-8; charset=utf-16le'])(
      'answers 415 naming charset=%s, before any of the body is read',
      async (charset) => {
        const body = Buffer.from(JSON.stringify(heartbeat({ node_id: 'n1' })), 'utf16le');
        const { body: answer } = await request(fleet.url)
          .post('/v1/nodes/heartbeat')
          .set('content-type', `application/json; charset=${charset}`)
          .send(body)
          .expect(415);
        expect(answer.message).toBe(
          `charset ${charset.split('; charset=').pop()!.toLowerCase()} is not supported: send application/json in UTF-8`,
        );
        await request(fleet.url).get('/v1/nodes').expect(200, []);
      },
    );

    it.each([
      'application/json; foo="a;charset=utf-8;"; charset=utf-16le',
      'application/json; x="\\";charset=utf-8"; charset=utf-16le',
      'application/json; charset="utf-8"',
    ])('answers 415 to quoted parameters, which could be read two ways: %s', async (type) => {
      const { body } = await request(fleet.url)
        .post('/v1/nodes/heartbeat')
        .set('content-type', type)
        .send(Buffer.from(JSON.stringify(heartbeat({ node_id: 'n1' })), 'utf16le'))
        .expect(415);
      expect(body.message).toContain('quoted parameters');
      await request(fleet.url).get('/v1/nodes').expect(200, []);
    });

    it.each(['application/json', 'application/json; charset=utf-8'])(
      'answers 400 naming the body to one that is not UTF-8 (a Latin-1 hostname), as %s, storing nothing',
      async (type) => {
        const text = JSON.stringify(heartbeat({ node_id: 'n1', hostname: 'm\u00fcnchen-1' }));
        // fetch, as supertest would serialize a Buffer as JSON of its own.
        const refused = await fetch(`${fleet.url}/v1/nodes/heartbeat`, {
          method: 'POST',
          headers: { 'content-type': type },
          body: Buffer.from(text, 'latin1'),
        });
        expect(refused.status).toBe(400);
        const body = (await refused.json()) as { message: string };
        expect(body.message).toBe(
          'request body is not valid UTF-8: JSON is sent in UTF-8 (a Latin-1 or other byte encoding is not taken)',
        );
        await request(fleet.url).get('/v1/nodes').expect(200, []);
        // The same in UTF-8 is taken, its hostname as sent.
        const taken = await fetch(`${fleet.url}/v1/nodes/heartbeat`, {
          method: 'POST',
          headers: { 'content-type': type },
          body: Buffer.from(text, 'utf8'),
        });
        expect(taken.status).toBe(200);
        const { body: node } = await request(fleet.url).get('/v1/nodes/n1').expect(200);
        expect(node.hostname).toBe('m\u00fcnchen-1');
      },
    );

    it('reads application/json with a charset, as curl and agents send it', async () => {
      await request(fleet.url)
        .post('/v1/nodes/heartbeat')
        .set('content-type', 'application/json; charset=utf-8')
        .send(JSON.stringify(heartbeat({ node_id: 'n1' })))
        .expect(200);
    });
  });
});
