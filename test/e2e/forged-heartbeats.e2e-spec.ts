import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import request from 'supertest';
import { MAX_BODY_BYTES, MAX_VMS_PER_HEARTBEAT } from '@app/fleet-domain';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat, vmRecord } from '../support/heartbeats';

/**
 * Input an attacker on the fleet network would send, against the real app in process: refused
 * with a short 4xx naming the field, or accepted, never a 500 and never a change it should not
 * make. The same behaviour with real processes: hostile-input.system-spec.ts.
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
      ['ram_total_mb', { ram_total_mb: 1e308 }],
      ['ram_total_mb', { ram_total_mb: 2 ** 31 }],
      ['ram_used_mb', { ram_used_mb: 2 ** 31 }],
      ['cpu_cores', { cpu_cores: 0 }],
      ['cpu_cores', { cpu_cores: 65_536 }],
      ['hostname', { hostname: 'evil\n[Nest] 1 - LOG [Nodes] node admin joined' }],
      ['hostname', { hostname: 'bell\u0007' }],
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

    it('reads application/json with a charset, as curl and agents send it', async () => {
      await request(fleet.url)
        .post('/v1/nodes/heartbeat')
        .set('content-type', 'application/json; charset=utf-8')
        .send(JSON.stringify(heartbeat({ node_id: 'n1' })))
        .expect(200);
    });
  });

  describe('a forged heartbeat', () => {
    const SECRET = 'admin-password-hunter2';
    let dummy: Server;
    let dummyPort: number;
    let reply: (res: import('node:http').ServerResponse) => void;

    beforeEach(async () => {
      dummy = createServer((req, res) => {
        req.resume();
        req.on('end', () => reply(res));
      });
      await new Promise<void>((resolve) => dummy.listen(0, '127.0.0.1', resolve));
      dummyPort = (dummy.address() as AddressInfo).port;
    });

    afterEach(async () => {
      dummy.closeAllConnections();
      await new Promise((resolve) => dummy.close(resolve));
    });

    it.each<[string, number, string, string]>([
      ['plain text', 500, 'text/plain', `the secret is ${SECRET}`],
      ['an HTML page', 502, 'text/html', `<html><body>${SECRET}</body></html>`],
      ['JSON without a message', 500, 'application/json', JSON.stringify({ secret: SECRET })],
      ['JSON whose message is not a string', 500, 'application/json', `{"message":["${SECRET}"]}`],
      ['a 201 with HTML', 201, 'text/html', `<p>${SECRET}</p>`],
      ['a 201 with a near-VmRecord', 201, 'application/json', JSON.stringify({ vm_id: SECRET })],
      ['1 MiB of text', 500, 'text/plain', SECRET.repeat(60_000)],
    ])(
      'aimed at a local service answering %s gets a 502 that never carries its reply',
      async (_what, status, contentType, text) => {
        reply = (res) => res.writeHead(status, { 'content-type': contentType }).end(text);
        await beat(
          heartbeat({ node_id: 'forged', wg_ip: '127.0.0.1', spawn_port: dummyPort }),
        ).expect(200);
        const response = await request(fleet.url)
          .post('/v1/vms')
          .send({ vm_type: 'web', ram_mb: 512, vcpu_count: 1 })
          .expect(502);
        expect(response.text).not.toContain(SECRET);
        expect(response.body.message).toMatch(/^agent of node forged /);
        if (status >= 400) expect(response.body.message).toContain(`answered ${status}`);
        await request(fleet.url).get('/v1/vms').expect(200, []);
      },
    );

    it('aimed at a service that redirects is never followed: the target hears nothing', async () => {
      let targetHeard = 0;
      const target = createServer((_req, res) => {
        targetHeard += 1;
        res
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ message: SECRET }));
      });
      await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
      const targetPort = (target.address() as AddressInfo).port;
      try {
        reply = (res) =>
          res.writeHead(307, { location: `http://127.0.0.1:${targetPort}/admin/reset` }).end();
        await beat(
          heartbeat({ node_id: 'forged', wg_ip: '127.0.0.1', spawn_port: dummyPort }),
        ).expect(200);
        const response = await request(fleet.url)
          .post('/v1/vms')
          .send({ vm_type: 'web', ram_mb: 512, vcpu_count: 1 })
          .expect(502);
        expect(response.body.message).toMatch(/^agent of node forged answered 307/);
        expect(response.text).not.toContain(SECRET);
        expect(targetHeard).toBe(0);
      } finally {
        await new Promise((resolve) => target.close(resolve));
      }
    });

    it("relays an agent's own JSON error message, shortened and on one line", async () => {
      reply = (res) =>
        res
          .writeHead(503, { 'content-type': 'application/json' })
          .end(JSON.stringify({ message: `base image missing\n${'x'.repeat(500)}` }));
      await beat(heartbeat({ node_id: 'n1', wg_ip: '127.0.0.1', spawn_port: dummyPort })).expect(
        200,
      );
      const { body } = await request(fleet.url)
        .post('/v1/vms')
        .send({ vm_type: 'web', ram_mb: 512, vcpu_count: 1 })
        .expect(502);
      // The newline is dropped, not passed on: the message stays one line.
      expect(body.message).toMatch(/^agent of node n1 answered 503: base image missingx+…$/);
      expect(body.message.length).toBeLessThan(300);
    });

    it('with the real boot_id and a far-future stamp holds the node for no more than one heartbeat', async () => {
      const real = (second: number) =>
        heartbeat({
          node_id: 'n1',
          wg_ip: '10.8.0.21',
          hostname: 'real-host',
          boot_id: 'real-boot',
          timestamp_utc: `2026-08-06T12:00:${String(second).padStart(2, '0')}.000000001Z`,
        });
      await beat(real(0)).expect(200);
      await beat(
        heartbeat({
          node_id: 'n1',
          wg_ip: '127.0.0.1',
          hostname: 'forged',
          boot_id: 'real-boot',
          timestamp_utc: '9999-12-31T23:59:59.999999999Z',
        }),
      ).expect(200);
      fleet.clock.advance(10_000);
      await beat(real(10)).expect(200);
      const { body } = await request(fleet.url).get('/v1/nodes/n1').expect(200);
      expect(body).toMatchObject({ wg_ip: '10.8.0.21', hostname: 'real-host' });

      // A delayed retry of the real agent is still ignored.
      await beat({ ...real(5), hostname: 'stale-retry' }).expect(200);
      expect((await request(fleet.url).get('/v1/nodes/n1')).body.hostname).toBe('real-host');
    });
  });
});
