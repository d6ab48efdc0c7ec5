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
