import { createServer as createHttpServer } from 'node:http';
import { AddressInfo, Server, Socket, createServer } from 'node:net';
import { PORT_REQUEST } from '../vms/vm-reachability';
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

  it("with a request: a connection accepted, held, then closed (QEMU's forward to a booting guest) says nothing", async () => {
    const received: string[] = [];
    const { server, port } = await serve((socket) => {
      socket.on('data', (chunk) => received.push(chunk.toString()));
      setTimeout(() => socket.destroy(), 1_000);
    });
    servers.push(server);
    expect(await probeTcpPort('127.0.0.1', port, 2_000, PORT_REQUEST)).toEqual({ kind: 'closed' });
    expect(received.join('')).toBe(PORT_REQUEST);
    const held = await probeTcpPort('127.0.0.1', port, 800, PORT_REQUEST);
    expect(held).toEqual({ kind: 'open', text: '' });
  });

  it("with a request: a real HTTP server's status line is its answer", async () => {
    const web = createHttpServer((_req, res) => res.end('hello'));
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    try {
      const answer = await probeTcpPort(
        '127.0.0.1',
        (web.address() as AddressInfo).port,
        5_000,
        PORT_REQUEST,
      );
      expect(answer).toMatchObject({
        kind: 'open',
        text: expect.stringMatching(/^HTTP\/1\.1 200 OK\r\n/),
      });
    } finally {
      await new Promise((resolve) => web.close(resolve));
    }
  });

  it('with a request: a banner is the answer, and nothing is sent', async () => {
    const received: string[] = [];
    const { server, port } = await serve((socket) => {
      socket.on('data', (chunk) => received.push(chunk.toString()));
      socket.write('220 mail.example ESMTP\r\n');
    });
    servers.push(server);
    expect(await probeTcpPort('127.0.0.1', port, 5_000, PORT_REQUEST)).toEqual({
      kind: 'open',
      text: '220 mail.example ESMTP\r\n',
    });
    expect(received).toEqual([]);
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
