import { Agent, Server, createServer, request } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ReplicaConnections } from './replica-connections';

/** Far below the 5 s a stop is given before SIGKILL. */
const PROMPT_MS = 2_000;

/**
 * The HTTP server's close waits for every request under way and for a kept-alive connection to
 * fall idle: a peer sending its copy's chunks one after the other held the agent's stop.
 */
describe('ReplicaConnections: a stopping agent ends its peers copies at once', () => {
  let server: Server;
  let agent: Agent;

  afterEach(async () => {
    agent?.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('lets the server close while a chunk is still coming in, and refuses the connection after', async () => {
    const connections = new ReplicaConnections();
    const chunkArrived = new Promise<void>((resolve) => {
      server = createServer((incoming) => {
        connections.track(incoming.socket);
        // A slow peer: its first bytes, then the rest far later than a stop may take.
        incoming.once('data', () => resolve());
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    agent = new Agent({ keepAlive: true });
    const chunk = request({
      agent,
      host: '127.0.0.1',
      port,
      method: 'PUT',
      path: '/v1/replicas/vm-0123456789abcdef/transfers/t1?offset=0',
      headers: { 'Content-Length': 1024 * 1024 },
    });
    const cut = new Promise<string>((resolve) =>
      chunk.on('error', (error) => resolve(error.message)),
    );
    chunk.write(Buffer.alloc(1024));
    await chunkArrived;

    connections.onModuleDestroy();
    const closed = new Promise<string>((resolve) => server.close(() => resolve('closed')));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve('still waiting for the chunk'), PROMPT_MS);
    });
    expect(await Promise.race([closed, late])).toBe('closed');
    clearTimeout(timer);
    // The peer sees its chunk cut (it sends the file again at its next interval).
    expect(await cut).toMatch(/socket hang up|ECONNRESET|EPIPE/);
    // A request that still reaches the stopping agent on an open connection is cut too.
    const destroy = jest.fn();
    connections.track({ destroy } as unknown as Socket);
    expect(destroy).toHaveBeenCalled();
  });
});
