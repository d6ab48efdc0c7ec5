import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Logger } from '@nestjs/common';
import request from 'supertest';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { heartbeat } from '../support/heartbeats';

/**
 * Heartbeats an attacker on the fleet network would forge, against the real app in process:
 * aimed at a local service, the controller never relays its reply nor follows its redirect;
 * with a real node's boot_id, they hold the node for no more than one heartbeat. With real
 * processes: attacks.system-spec.ts.
 */
describe('fleet controller: a forged heartbeat', () => {
  const SECRET = 'admin-password-hunter2';
  let fleet: RunningFleet;
  /** The local service a forged heartbeat aims the controller at. */
  let dummy: Server;
  let dummyPort: number;
  let reply: (res: import('node:http').ServerResponse) => void;

  beforeEach(async () => {
    fleet = await startFleet();
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
    await fleet.close();
  });

  const beat = (body: object | string) =>
    request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .set('content-type', 'application/json')
      .send(typeof body === 'string' ? body : JSON.stringify(body));

  it.each<[string, number, string, string]>([
    ['plain text', 500, 'text/plain', `the secret is ${SECRET}`],
    ['an HTML page', 502, 'text/html', `<html><body>${SECRET}</body></html>`],
    ['JSON without a message', 500, 'application/json', JSON.stringify({ secret: SECRET })],
    ['JSON whose message is not a string', 500, 'application/json', `{"message":["${SECRET}"]}`],
    ['a 201 with HTML', 201, 'text/html', `<p>${SECRET}</p>`],
    ['a 201 with a near-VmRecord', 201, 'application/json', JSON.stringify({ vm_id: SECRET })],
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

  it.each<[string, (res: import('node:http').ServerResponse) => void, string]>([
    [
      '1 MiB of text',
      (res) => res.writeHead(500, { 'content-type': 'text/plain' }).end(SECRET.repeat(60_000)),
      'answered 500 with more than 64 KiB',
    ],
    [
      'a status outside 200-599',
      (res) => res.socket?.end(`HTTP/1.1 600 ${SECRET}\r\n\r\n`),
      'answered with status 600',
    ],
  ])(
    'aimed at a local service answering %s gets the same words, whatever it answered; the log has which',
    async (_what, unusable, logged) => {
      const warn = jest.spyOn(Logger.prototype, 'warn');
      reply = unusable;
      await beat(
        heartbeat({ node_id: 'forged', wg_ip: '127.0.0.1', spawn_port: dummyPort }),
      ).expect(200);
      const response = await request(fleet.url)
        .post('/v1/vms')
        .send({ vm_type: 'web', ram_mb: 512, vcpu_count: 1 })
        .expect(502);
      expect(response.body.message).toBe('agent of node forged answered unusably');
      expect(warn).toHaveBeenCalledWith(
        `node forged: /v1/spawn at http://127.0.0.1:${dummyPort}: ${logged}`,
      );
      warn.mockRestore();
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
    await beat(heartbeat({ node_id: 'n1', wg_ip: '127.0.0.1', spawn_port: dummyPort })).expect(200);
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
