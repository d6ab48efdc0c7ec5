import { AddressInfo, Server, Socket, createServer } from 'node:net';
import { probeTcpPort } from './cli-io';

/** A server on 127.0.0.1 doing `onConnection` with each connection; its port. */
async function serve(
  onConnection: (socket: Socket) => void,
): Promise<{ server: Server; port: number }> {
  const server = createServer(onConnection);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

describe('probeTcpPort', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
  });

  it('reads what the port says first: an SSH banner line', async () => {
    const { server, port } = await serve((socket) => socket.write('SSH-2.0-OpenSSH_9.2p1\r\n'));
    servers.push(server);
    expect(await probeTcpPort('127.0.0.1', port, 5_000)).toEqual({
      kind: 'open',
      text: 'SSH-2.0-OpenSSH_9.2p1\r\n',
    });
  });

  it('tells a connection accepted then dropped (a forward with nothing behind it) from none', async () => {
    const { server, port } = await serve((socket) => socket.destroy());
    servers.push(server);
    expect(await probeTcpPort('127.0.0.1', port, 5_000)).toEqual({ kind: 'closed' });
    await new Promise((resolve) => server.close(resolve));
    servers.pop();
    expect(await probeTcpPort('127.0.0.1', port, 5_000)).toEqual({ kind: 'refused' });
  });
});
