import { IncomingMessage, Server, ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { heartbeat } from '../../../../test/support/heartbeats';
import { freePort } from '../../../../test/support/redis-server';
import { FleetClient } from './fleet.client';

type Handler = (request: IncomingMessage, body: string, response: ServerResponse) => void;

/** A controller the test answers by hand, on a free loopback port. */
async function controller(handle: Handler): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => handle(request, body, response));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('FleetClient', () => {
  let server: Server | undefined;

  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
    server = undefined;
  });

  it('POSTs the heartbeat as JSON to /v1/nodes/heartbeat under the endpoint', async () => {
    const received: Array<{ method?: string; url?: string; type?: string; body: unknown }> = [];
    const fleet = await controller((request, body, response) => {
      received.push({
        method: request.method,
        url: request.url,
        type: request.headers['content-type'],
        body: JSON.parse(body),
      });
      response.end();
    });
    server = fleet.server;
    const sent = heartbeat({ node_id: 'node-a' });
    await new FleetClient(`${fleet.url}/fleet/`).sendHeartbeat(sent, AbortSignal.timeout(2_000));
    expect(received).toEqual([
      { method: 'POST', url: '/fleet/v1/nodes/heartbeat', type: 'application/json', body: sent },
    ]);
  });

  it('says whether the controller took the heartbeat: only accepted false is a no', async () => {
    const answers = [
      '',
      '{"accepted":true}',
      'not json',
      '{"accepted":false,"stored_timestamp_utc":"2026-08-06T12:10:00.000000001Z"}',
      '{"accepted":false}',
    ];
    const fleet = await controller((_request, _body, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(answers.shift());
    });
    server = fleet.server;
    const client = new FleetClient(fleet.url);
    const send = () =>
      client.sendHeartbeat(heartbeat({ node_id: 'n' }), AbortSignal.timeout(2_000));
    expect(await send()).toEqual({ accepted: true });
    expect(await send()).toEqual({ accepted: true });
    expect(await send()).toEqual({ accepted: true });
    expect(await send()).toEqual({
      accepted: false,
      stored_timestamp_utc: '2026-08-06T12:10:00.000000001Z',
    });
    expect(await send()).toEqual({ accepted: false });
  });

  it('reads superseded_vm_ids as fleet ids only: anything that could name another path is dropped', async () => {
    const fleet = await controller((_request, _body, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(
        JSON.stringify({
          accepted: true,
          superseded_vm_ids: ['vm-00000000000000a1', '../../etc', 'a/b', '', 7, null, '.hidden'],
        }),
      );
    });
    server = fleet.server;
    const answer = await new FleetClient(fleet.url).sendHeartbeat(
      heartbeat({ node_id: 'n' }),
      AbortSignal.timeout(2_000),
    );
    expect(answer).toEqual({ accepted: true, superseded_vm_ids: ['vm-00000000000000a1'] });
  });

  it("throws with the status and the controller's message when it does not answer 200", async () => {
    const fleet = await controller((_request, _body, response) => {
      response.statusCode = 400;
      response.setHeader('content-type', 'application/json');
      response.end(
        JSON.stringify({
          statusCode: 400,
          error: 'Bad Request',
          message: 'wg_ip must be an IP address',
        }),
      );
    });
    server = fleet.server;
    await expect(
      new FleetClient(fleet.url).sendHeartbeat(
        heartbeat({ node_id: 'n' }),
        AbortSignal.timeout(2_000),
      ),
    ).rejects.toThrow('controller answered 400: wg_ip must be an IP address');
  });

  it('says why when the controller is not there or does not answer in time', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    // The socket's error as it is (its code is what the heartbeat's warning shows).
    await expect(
      new FleetClient(closed).sendHeartbeat(
        heartbeat({ node_id: 'n' }),
        AbortSignal.timeout(2_000),
      ),
    ).rejects.toMatchObject({ code: 'ECONNREFUSED' });

    const silent = await controller(() => undefined);
    server = silent.server;
    // The signal's reason, so the warning says "no answer within ..." rather than "aborted".
    await expect(
      new FleetClient(silent.url).sendHeartbeat(
        heartbeat({ node_id: 'n' }),
        AbortSignal.timeout(200),
      ),
    ).rejects.toMatchObject({ name: 'TimeoutError' });
  });
  it('sends the node token with every heartbeat and follows no redirect (the token would go along)', async () => {
    const received: Array<{ url?: string; authorization?: string }> = [];
    const fleet = await controller((request, _body, response) => {
      received.push({ url: request.url, authorization: request.headers.authorization });
      response.statusCode = 307;
      response.setHeader('location', 'http://127.0.0.1:1/v1/nodes/heartbeat');
      response.end();
    });
    server = fleet.server;
    const client = new FleetClient(fleet.url, { Authorization: 'Bearer node-token-0123456789' });
    await expect(
      client.sendHeartbeat(heartbeat({ node_id: 'n' }), AbortSignal.timeout(2_000)),
    ).rejects.toThrow('controller answered 307');
    expect(received).toEqual([
      { url: '/v1/nodes/heartbeat', authorization: 'Bearer node-token-0123456789' },
    ]);
  });
});

describe('FleetClient with several controllers (VM_FLEET_ENDPOINT a list)', () => {
  const servers: Server[] = [];

  afterEach(async () => {
    for (const server of servers.splice(0)) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  async function counting(): Promise<{ url: string; beats: () => number }> {
    let beats = 0;
    const fleet = await controller((_request, _body, response) => {
      beats += 1;
      response.setHeader('content-type', 'application/json');
      response.end('{"accepted":true,"fence_after_s":45}');
    });
    servers.push(fleet.server);
    return { url: fleet.url, beats: () => beats };
  }

  it('tries the next controller when the first is dead, then sticks to the one that answered', async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const alive = await counting();
    const client = new FleetClient([dead, alive.url], {}, 1_000);
    expect(client.endpointForLogs).toBe(dead);
    const answer = await client.sendHeartbeat(
      heartbeat({ node_id: 'n' }),
      AbortSignal.timeout(2_000),
    );
    expect(answer).toEqual({ accepted: true, fence_after_s: 45 });
    expect(client.endpointForLogs).toBe(alive.url);
    await client.sendHeartbeat(heartbeat({ node_id: 'n' }), AbortSignal.timeout(2_000));
    expect(alive.beats()).toBe(2);
  });

  it('gives a silent controller only its share of the time, then asks the next', async () => {
    const silent = await controller(() => undefined);
    servers.push(silent.server);
    const alive = await counting();
    const client = new FleetClient([silent.url, alive.url], {}, 300);
    // The silent one never answers: without a share of its own it would take all 4 s (a busy
    // machine still leaves the live one over 3 s).
    await client.sendHeartbeat(heartbeat({ node_id: 'n' }), AbortSignal.timeout(4_000));
    expect(alive.beats()).toBe(1);
  });

  it("says every controller's failure when none answers, without their credentials", async () => {
    const first = `http://127.0.0.1:${await freePort()}`;
    const second = `http://ops:s3cret@127.0.0.1:${await freePort()}`;
    const failure = await new FleetClient([first, second], {}, 1_000)
      .sendHeartbeat(heartbeat({ node_id: 'n' }), AbortSignal.timeout(2_000))
      .catch((error: Error) => error.message);
    expect(failure).toMatch(
      /^no controller answered \(http:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED.*; http:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED/,
    );
    expect(failure).not.toContain('s3cret');
  });

  it('reads fence_after_s only as whole seconds within 10..600', async () => {
    const answers = ['{"fence_after_s":9}', '{"fence_after_s":"45"}', '{"fence_after_s":45.5}'];
    const fleet = await controller((_request, _body, response) => response.end(answers.shift()));
    servers.push(fleet.server);
    const client = new FleetClient(fleet.url);
    for (let i = 0; i < 3; i += 1) {
      expect(
        await client.sendHeartbeat(heartbeat({ node_id: 'n' }), AbortSignal.timeout(2_000)),
      ).toEqual({
        accepted: true,
      });
    }
  });

  it('reads copies_default only beside fence_after_s, and only as a whole 0..2', async () => {
    const answers = [
      '{"fence_after_s":45,"copies_default":0}',
      '{"fence_after_s":45,"copies_default":3}',
      '{"fence_after_s":45,"copies_default":"1"}',
      '{"fence_after_s":45,"copies_default":0.5}',
      '{"copies_default":0}',
    ];
    const fleet = await controller((_request, _body, response) => response.end(answers.shift()));
    servers.push(fleet.server);
    const client = new FleetClient(fleet.url);
    const read = [];
    for (let i = 0; i < 5; i += 1) {
      read.push(
        await client.sendHeartbeat(heartbeat({ node_id: 'n' }), AbortSignal.timeout(2_000)),
      );
    }
    expect(read).toEqual([
      { accepted: true, fence_after_s: 45, copies_default: 0 },
      { accepted: true, fence_after_s: 45 },
      { accepted: true, fence_after_s: 45 },
      { accepted: true, fence_after_s: 45 },
      { accepted: true },
    ]);
  });
});
