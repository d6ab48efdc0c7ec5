import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Duplex, PassThrough } from 'node:stream';
import { WebSocketConnection } from './web-socket';
import {
  CLOSE_POLICY,
  CLOSE_TOO_BIG,
  MAX_WRITE_BUFFER_BYTES,
  PONG_WRITE_BUFFER_LIMIT,
  FrameDecoder,
  Opcode,
  WebSocketProtocolError,
  encodeFrame,
} from './web-socket-frames';
import { WebSocketRefusedError, openWebSocket } from './web-socket-client';
import {
  acceptKeyOf,
  acceptUpgrade,
  isWebSocketKey,
  refuseUpgrade,
  upgradeProblem,
} from './web-socket-upgrades';

const MASK = Buffer.from([1, 2, 3, 4]);

describe('WebSocket frames', () => {
  it("computes the RFC's own example of Sec-WebSocket-Accept and checks keys", () => {
    expect(acceptKeyOf('dGhlIHNhbXBsZSBub25jZQ==')).toBe('s3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
    expect(isWebSocketKey('dGhlIHNhbXBsZSBub25jZQ==')).toBe(true);
    expect(isWebSocketKey('short==')).toBe(false);
    expect(isWebSocketKey(undefined)).toBe(false);
  });

  it('reads back what it writes, masked or not, at each length form, split anywhere', () => {
    for (const size of [0, 5, 125, 126, 300, 65535, 65536, 70000]) {
      const payload = Buffer.alloc(size, 7);
      const masked = encodeFrame(Opcode.Binary, payload, MASK);
      const decoder = new FrameDecoder(true, 100_000);
      const frames = [
        ...decoder.push(masked.subarray(0, 1)),
        ...decoder.push(masked.subarray(1, 9)),
        ...decoder.push(masked.subarray(9)),
      ];
      expect(frames).toEqual([{ fin: true, opcode: Opcode.Binary, payload }]);
      expect(new FrameDecoder(false, 100_000).push(encodeFrame(Opcode.Text, payload))).toHaveLength(
        1,
      );
    }
  });

  it('refuses a frame over the bound from its header alone, and unmasked client frames', () => {
    const decoder = new FrameDecoder(true, 1024);
    const header = encodeFrame(Opcode.Binary, Buffer.alloc(2000), MASK).subarray(0, 4);
    expect(() => decoder.push(header)).toThrow(WebSocketProtocolError);
    // A 64-bit length claiming petabytes: refused before anything is allocated.
    const huge = Buffer.from([0x82, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    try {
      new FrameDecoder(true, 1024).push(huge);
      throw new Error('not refused');
    } catch (error) {
      expect((error as WebSocketProtocolError).closeCode).toBe(CLOSE_TOO_BIG);
    }
    expect(() =>
      new FrameDecoder(true, 1024).push(encodeFrame(Opcode.Binary, Buffer.from('x'))),
    ).toThrow('a client frame was not masked');
    expect(() => new FrameDecoder(false, 1024).push(Buffer.from([0xc2, 0x00]))).toThrow(
      'reserved bits',
    );
    expect(() =>
      new FrameDecoder(false, 1024).push(encodeFrame(Opcode.Ping, Buffer.alloc(126))),
    ).toThrow('control frame');
  });
});

describe('WebSocketConnection', () => {
  function pair(maxMessageBytes = 1024): {
    toServer: PassThrough;
    fromServer: Buffer[];
    server: WebSocketConnection;
  } {
    const socket = new PassThrough();
    const fromServer: Buffer[] = [];
    const toServer = new PassThrough();
    // The server reads what the test writes into toServer and writes into socket.
    const duplex = Object.assign(socket, {});
    const server = new WebSocketConnection(duplex, { role: 'server', maxMessageBytes });
    socket.removeAllListeners('data');
    socket.on('data', (chunk: Buffer) => fromServer.push(chunk));
    toServer.on('data', (chunk: Buffer) =>
      (server as unknown as { received(c: Buffer): void }).received(chunk),
    );
    return { toServer, fromServer, server };
  }

  it('assembles fragments, answers pings, and closes a message over its bound with 1009', () => {
    const { toServer, fromServer, server } = pair(8);
    const messages: string[] = [];
    const closes: number[] = [];
    server.onMessage((data) => messages.push(data.toString()));
    server.onClose((code) => closes.push(code));
    toServer.write(encodeFrame(Opcode.Text, Buffer.from('ab'), MASK, false));
    toServer.write(encodeFrame(Opcode.Ping, Buffer.from('p'), MASK));
    toServer.write(encodeFrame(Opcode.Continuation, Buffer.from('cd'), MASK, true));
    expect(messages).toEqual(['abcd']);
    const pong = new FrameDecoder(false, 100).push(Buffer.concat(fromServer));
    expect(pong).toEqual([{ fin: true, opcode: Opcode.Pong, payload: Buffer.from('p') }]);
    toServer.write(encodeFrame(Opcode.Binary, Buffer.alloc(5), MASK, false));
    toServer.write(encodeFrame(Opcode.Continuation, Buffer.alloc(5), MASK, true));
    expect(messages).toHaveLength(1);
    expect(closes).toEqual([CLOSE_TOO_BIG]);
  });
});

describe('a peer that never reads', () => {
  /** A socket whose writes are never taken: what a peer that stopped reading looks like. */
  function stuck(): { socket: Duplex; feed: (frame: Buffer) => void } {
    const socket = new Duplex({
      read: () => undefined,
      write: () => undefined,
      highWaterMark: 16 * 1024,
    });
    return { socket, feed: (frame) => socket.push(frame) };
  }

  it('gets no pong while its buffer is full: pinging without reading grows nothing', async () => {
    const { socket, feed } = stuck();
    const server = new WebSocketConnection(socket, { role: 'server' });
    const ping = encodeFrame(Opcode.Ping, Buffer.alloc(125, 1), MASK);
    for (let i = 0; i < 20_000; i++) feed(ping);
    await new Promise((resolve) => setImmediate(resolve));
    // 20 000 pongs would be 2.5 MB; the buffer stays at the pong limit (plus one frame).
    expect(socket.writableLength).toBeLessThan(PONG_WRITE_BUFFER_LIMIT + 200);
    expect(server.isOpen).toBe(true);
  });

  it('is closed with 1008 once what it was sent passes the write bound', () => {
    const { socket } = stuck();
    const server = new WebSocketConnection(socket, { role: 'server' });
    const closes: number[] = [];
    server.onClose((code) => closes.push(code));
    const chunk = Buffer.alloc(64 * 1024, 2);
    for (let i = 0; i < 40 && server.isOpen; i++) server.send(chunk);
    expect(closes).toEqual([CLOSE_POLICY]);
    expect(socket.destroyed).toBe(true);
    expect(server.send(chunk)).toBe(false);
    expect(MAX_WRITE_BUFFER_BYTES).toBe(1024 * 1024);
  });
});

describe('keep-alive', () => {
  afterEach(() => jest.useRealTimers());

  it('closes with 1008 and the reason at the first ping after what it lasts for has ended', () => {
    jest.useFakeTimers();
    const socket = new Duplex({ read: () => undefined, write: (_c, _e, done) => done() });
    const server = new WebSocketConnection(socket, { role: 'server' });
    const closes: Array<[number, string]> = [];
    server.onClose((code, reason) => closes.push([code, reason]));
    let ended: string | undefined = undefined;
    server.keepAlive(1_000, () => ended);
    jest.advanceTimersByTime(1_000);
    expect(server.isOpen).toBe(true);
    ended = 'the console session ended';
    jest.advanceTimersByTime(1_000);
    expect(closes).toEqual([[CLOSE_POLICY, 'the console session ended']]);
  });
});

describe('handshakes over node:http', () => {
  let server: Server;
  let url: URL;

  beforeEach(async () => {
    server = createServer((_req, res) => res.end());
    server.on('upgrade', (req, socket, head: Buffer) => {
      const problem = upgradeProblem(req);
      if (req.url === '/refused' || problem !== undefined) {
        return refuseUpgrade(socket, 409, problem ?? 'in use by another session');
      }
      const ws = acceptUpgrade(req, socket, head);
      ws.onMessage((data) => ws.send(Buffer.from(`echo:${data.toString()}`)));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  });

  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('opens, echoes, and closes both ends', async () => {
    const ws = await openWebSocket({ url, timeoutMs: 2_000 });
    const echoed = new Promise<string>((resolve) =>
      ws.onMessage((data) => resolve(data.toString())),
    );
    ws.send(Buffer.from('hi'));
    expect(await echoed).toBe('echo:hi');
    const closed = new Promise<number>((resolve) => ws.onClose((code) => resolve(code)));
    ws.close();
    expect(await closed).toBe(1000);
  });

  it('outlives its handshake timeout once open', async () => {
    const ws = await openWebSocket({ url, timeoutMs: 50 });
    await new Promise((resolve) => setTimeout(resolve, 150));
    const echoed = new Promise<string>((resolve) =>
      ws.onMessage((data) => resolve(data.toString())),
    );
    ws.send(Buffer.from('still'));
    expect(await echoed).toBe('echo:still');
    ws.close();
  });

  it('gives a refusal its status and message', async () => {
    const refused = openWebSocket({ url: new URL('/refused', url), timeoutMs: 2_000 });
    await expect(refused).rejects.toBeInstanceOf(WebSocketRefusedError);
    await expect(refused).rejects.toMatchObject({
      status: 409,
      refusal: 'in use by another session',
    });
  });
});
