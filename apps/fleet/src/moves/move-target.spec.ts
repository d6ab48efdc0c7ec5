import { IncomingHttpHeaders, Server, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { askTargetToGiveUp } from './move-target';

/** The controller telling a move's new node to give it up, once its old node's part failed. */
describe("the controller's give-up to a move's new node", () => {
  let server: Server;
  let port: number;
  let status = 200;
  let seen: { method?: string; url?: string; headers?: IncomingHttpHeaders } = {};

  beforeAll(async () => {
    server = createServer((request, response) => {
      seen = { method: request.method, url: request.url, headers: request.headers };
      if (status === 0) return; // never answers
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ message: 'anything the agent says is not relayed' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const ask = (timeoutMs?: number) =>
    askTargetToGiveUp({ host: '127.0.0.1', port }, 'web-1', 'the-grant', timeoutMs);

  it('sends DELETE on the incoming move with the move grant as its bearer', async () => {
    status = 200;
    await expect(ask()).resolves.toEqual({ kind: 'rolled-back' });
    expect(seen).toMatchObject({
      method: 'DELETE',
      url: '/v1/moves/web-1/incoming',
      headers: { authorization: 'Bearer the-grant' },
    });
  });

  it('hears 409 as: the new node received the whole guest and runs it', async () => {
    status = 409;
    await expect(ask()).resolves.toEqual({ kind: 'runs-there' });
  });

  it('knows nothing from another answer, no answer, or no node', async () => {
    status = 502;
    await expect(ask()).resolves.toEqual({ kind: 'unknown', detail: 'it answered 502' });
    status = 0;
    await expect(ask(200)).resolves.toMatchObject({
      kind: 'unknown',
      detail: expect.stringContaining('no answer within 200 ms') as unknown,
    });
    await expect(
      askTargetToGiveUp({ host: '127.0.0.1', port: 1 }, 'web-1', 'the-grant'),
    ).resolves.toMatchObject({ kind: 'unknown' });
  });
});
