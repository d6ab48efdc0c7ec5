import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * The small part of WebSocket (RFC 6455) the serial terminals need, over node:http's upgrade:
 * the handshake on both sides, binary and text messages (fragmented or not), ping/pong and
 * close; no extensions (permessage-deflate is never agreed). Every frame and message is bounded
 * (`maxMessageBytes`): a larger one closes the connection (1009) before its payload is kept.
 */

const ACCEPT_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

export enum Opcode {
  Continuation = 0x0,
  Text = 0x1,
  Binary = 0x2,
  Close = 0x8,
  Ping = 0x9,
  Pong = 0xa,
}

/** Close codes this code sends or reads (RFC 6455 7.4.1). */
export const CLOSE_NORMAL = 1000;
export const CLOSE_GOING_AWAY = 1001;
export const CLOSE_PROTOCOL_ERROR = 1002;
export const CLOSE_POLICY = 1008;
export const CLOSE_TOO_BIG = 1009;
export const CLOSE_INTERNAL = 1011;

/** The bound on one message (all its fragments) when none is given. */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024;
/**
 * Past this many bytes waiting in the socket's write buffer, a peer reads too slowly and is let
 * go (1008): whatever is written (a relay's output, pongs), the buffer never grows without bound.
 */
export const MAX_WRITE_BUFFER_BYTES = 1024 * 1024;
/**
 * A ping is answered only while less than this waits to be written: a peer that pings and never
 * reads gets no pong to pile up (RFC 6455 5.5.3 allows answering only the latest ping).
 */
export const PONG_WRITE_BUFFER_LIMIT = 64 * 1024;
/** A control frame's payload bound, fixed by the RFC. */
const MAX_CONTROL_PAYLOAD = 125;
/** Longest close reason sent: a close frame's payload is 125 bytes, 2 of them the code. */
const MAX_REASON_BYTES = MAX_CONTROL_PAYLOAD - 2;

/** The Sec-WebSocket-Accept of a Sec-WebSocket-Key. */
export function acceptKeyOf(key: string): string {
  return createHash('sha1')
    .update(key + ACCEPT_GUID)
    .digest('base64');
}

/** Whether a Sec-WebSocket-Key is what the RFC says: 16 bytes in base64. */
export function isWebSocketKey(key: string | undefined): key is string {
  return (
    key !== undefined &&
    /^[A-Za-z0-9+/]{22}==$/.test(key) &&
    Buffer.from(key, 'base64').length === 16
  );
}

export class WebSocketProtocolError extends Error {
  constructor(
    message: string,
    readonly closeCode: number = CLOSE_PROTOCOL_ERROR,
  ) {
    super(message);
    this.name = 'WebSocketProtocolError';
  }
}

export interface Frame {
  fin: boolean;
  opcode: Opcode;
  payload: Buffer;
}

/** One frame; `mask` given (a client's frames must be masked), the payload is masked with it. */
export function encodeFrame(opcode: Opcode, payload: Buffer, mask?: Buffer, fin = true): Buffer {
  const length = payload.length;
  const lengthBytes = length < 126 ? 0 : length <= 0xffff ? 2 : 8;
  const header = Buffer.alloc(2 + lengthBytes + (mask ? 4 : 0));
  header[0] = (fin ? 0x80 : 0) | opcode;
  header[1] = (mask ? 0x80 : 0) | (lengthBytes === 0 ? length : lengthBytes === 2 ? 126 : 127);
  if (lengthBytes === 2) header.writeUInt16BE(length, 2);
  if (lengthBytes === 8) header.writeBigUInt64BE(BigInt(length), 2);
  if (!mask) return Buffer.concat([header, payload]);
  mask.copy(header, 2 + lengthBytes);
  const masked = Buffer.alloc(length);
  for (let i = 0; i < length; i++) masked[i] = payload[i] ^ mask[i & 3];
  return Buffer.concat([header, masked]);
}

/**
 * Reads frames from a byte stream as it arrives. `expectMasked`: a server reads a client's
 * frames, which must be masked; a client reads a server's, which must not be. A frame longer
 * than `maxPayload` is refused from its header, before its payload is held.
 */
export class FrameDecoder {
  private buffered: Buffer = Buffer.alloc(0);

  constructor(
    private readonly expectMasked: boolean,
    private readonly maxPayload: number,
  ) {}

  push(chunk: Buffer): Frame[] {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const frames: Frame[] = [];
    for (;;) {
      const frame = this.next();
      if (frame === undefined) return frames;
      frames.push(frame);
    }
  }

  private next(): Frame | undefined {
    const data = this.buffered;
    if (data.length < 2) return undefined;
    const fin = (data[0] & 0x80) !== 0;
    if ((data[0] & 0x70) !== 0)
      throw new WebSocketProtocolError('reserved bits set (no extension was agreed)');
    const opcode = data[0] & 0x0f;
    if (![0x0, 0x1, 0x2, 0x8, 0x9, 0xa].includes(opcode)) {
      throw new WebSocketProtocolError(`unknown opcode ${opcode}`);
    }
    const masked = (data[1] & 0x80) !== 0;
    if (masked !== this.expectMasked) {
      throw new WebSocketProtocolError(
        masked ? 'a server frame was masked' : 'a client frame was not masked',
      );
    }
    let length = data[1] & 0x7f;
    let offset = 2;
    if (length === 126) {
      if (data.length < 4) return undefined;
      length = data.readUInt16BE(2);
      offset = 4;
    } else if (length === 127) {
      if (data.length < 10) return undefined;
      const long = data.readBigUInt64BE(2);
      if (long > BigInt(this.maxPayload)) {
        throw new WebSocketProtocolError('frame too large', CLOSE_TOO_BIG);
      }
      length = Number(long);
      offset = 10;
    }
    const control = opcode >= 0x8;
    if (control && (length > MAX_CONTROL_PAYLOAD || !fin)) {
      throw new WebSocketProtocolError('a control frame was fragmented or over 125 bytes');
    }
    if (length > this.maxPayload)
      throw new WebSocketProtocolError('frame too large', CLOSE_TOO_BIG);
    const maskAt = offset;
    if (masked) offset += 4;
    if (data.length < offset + length) return undefined;
    const payload = Buffer.from(data.subarray(offset, offset + length));
    if (masked) {
      for (let i = 0; i < length; i++) payload[i] ^= data[maskAt + (i & 3)];
    }
    this.buffered = data.subarray(offset + length);
    return { fin, opcode: opcode as Opcode, payload };
  }
}

export interface WebSocketOptions {
  /** A client masks what it sends and reads unmasked frames; a server the reverse. */
  role: 'client' | 'server';
  maxMessageBytes?: number;
  /** Bytes that came with the handshake, already past it (node:http's `head`). */
  head?: Buffer;
}

/**
 * One open WebSocket over the socket its handshake upgraded. Messages arrive through
 * `onMessage` (text and binary alike, as bytes); `onClose` is called once, however it ends
 * (a close frame, the socket's end or error, a protocol error, `close` or `destroy` here).
 */
export class WebSocketConnection {
  private readonly decoder: FrameDecoder;
  private readonly maxMessageBytes: number;
  private fragments: Buffer[] = [];
  private fragmentsBytes = 0;
  private closeSent = false;
  private ended = false;
  private heardSincePing = true;
  private keepAliveTimer: NodeJS.Timeout | undefined;
  private messageHandler: (data: Buffer) => void = () => undefined;
  private closeHandlers: Array<(code: number, reason: string) => void> = [];

  constructor(
    readonly socket: Duplex,
    private readonly options: WebSocketOptions,
  ) {
    this.maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.decoder = new FrameDecoder(options.role === 'server', this.maxMessageBytes);
    socket.on('data', (chunk: Buffer) => this.received(chunk));
    socket.on('end', () => this.finish(CLOSE_GOING_AWAY, 'the other end went away'));
    socket.on('close', () => this.finish(CLOSE_GOING_AWAY, 'the other end went away'));
    socket.on('error', () => this.finish(CLOSE_GOING_AWAY, 'the connection failed'));
    if (options.head && options.head.length > 0) {
      const head = options.head;
      // After the caller has had the chance to set its handlers.
      setImmediate(() => this.received(head));
    }
  }

  get isOpen(): boolean {
    return !this.ended && !this.closeSent;
  }

  onMessage(handler: (data: Buffer) => void): void {
    this.messageHandler = handler;
  }

  onClose(handler: (code: number, reason: string) => void): void {
    this.closeHandlers.push(handler);
  }

  /** Sends bytes as one binary message; false when the socket's buffer is full (see `socket`'s drain). */
  send(data: Buffer, opcode: Opcode = Opcode.Binary): boolean {
    if (!this.isOpen) return false;
    return this.write(encodeFrame(opcode, data, this.maskKey()));
  }

  /** Writes a frame; a write buffer grown past its bound closes the connection (1008). */
  private write(frame: Buffer): boolean {
    const flowing = this.socket.write(frame);
    if (this.socket.writableLength > MAX_WRITE_BUFFER_BYTES) {
      this.close(CLOSE_POLICY, 'the peer reads too slowly');
      // The close frame may never be read: the connection does not wait for it.
      this.socket.destroy();
      return false;
    }
    return flowing;
  }

  /** Sends a close frame with its code and reason, then ends the connection. */
  close(code = CLOSE_NORMAL, reason = ''): void {
    if (this.ended) return;
    if (!this.closeSent) {
      this.closeSent = true;
      const reasonBytes = Buffer.from(reason, 'utf8').subarray(0, MAX_REASON_BYTES);
      const payload = Buffer.alloc(2 + reasonBytes.length);
      payload.writeUInt16BE(code, 0);
      reasonBytes.copy(payload, 2);
      this.socket.write(encodeFrame(Opcode.Close, payload, this.maskKey()));
    }
    this.socket.end();
    // A peer that never closes its side is not waited for.
    setTimeout(() => this.socket.destroy(), 2_000).unref();
    this.finish(code, reason);
  }

  /**
   * Pings every `intervalMs`, and ends the connection when nothing at all came back since the
   * previous ping: a peer gone without a word (a laptop closed, a cable pulled) frees what it held.
   * `ended`: asked at each ping; a reason returned (a session logged out or expired) closes the
   * connection with 1008 and that reason.
   */
  keepAlive(intervalMs: number, ended?: () => string | undefined): void {
    this.keepAliveTimer = setInterval(() => {
      const why = ended?.();
      if (why !== undefined) {
        this.close(CLOSE_POLICY, why);
        return;
      }
      if (!this.heardSincePing) {
        this.socket.destroy();
        this.finish(CLOSE_GOING_AWAY, 'no answer to a ping');
        return;
      }
      this.heardSincePing = false;
      if (this.isOpen) this.write(encodeFrame(Opcode.Ping, Buffer.alloc(0), this.maskKey()));
    }, intervalMs);
    this.keepAliveTimer.unref();
  }

  private maskKey(): Buffer | undefined {
    return this.options.role === 'client' ? randomBytes(4) : undefined;
  }

  private received(chunk: Buffer): void {
    if (this.ended) return;
    this.heardSincePing = true;
    let frames: Frame[];
    try {
      frames = this.decoder.push(chunk);
    } catch (error) {
      const protocol = error instanceof WebSocketProtocolError;
      this.close(
        protocol ? error.closeCode : CLOSE_PROTOCOL_ERROR,
        protocol ? error.message : 'unreadable frame',
      );
      return;
    }
    for (const frame of frames) {
      if (this.ended) return;
      this.frame(frame);
    }
  }

  private frame({ fin, opcode, payload }: Frame): void {
    switch (opcode) {
      case Opcode.Ping:
        if (this.isOpen && this.socket.writableLength < PONG_WRITE_BUFFER_LIMIT) {
          this.write(encodeFrame(Opcode.Pong, payload, this.maskKey()));
        }
        return;
      case Opcode.Pong:
        return;
      case Opcode.Close: {
        const code = payload.length >= 2 ? payload.readUInt16BE(0) : CLOSE_NORMAL;
        const reason = payload.subarray(2).toString('utf8');
        this.close(code, reason);
        return;
      }
      case Opcode.Continuation:
        if (this.fragments.length === 0) {
          this.close(CLOSE_PROTOCOL_ERROR, 'a continuation frame began no message');
          return;
        }
        break;
      default:
        if (this.fragments.length > 0) {
          this.close(CLOSE_PROTOCOL_ERROR, 'a new message began inside another');
          return;
        }
    }
    this.fragmentsBytes += payload.length;
    if (this.fragmentsBytes > this.maxMessageBytes) {
      this.close(CLOSE_TOO_BIG, 'message too large');
      return;
    }
    this.fragments.push(payload);
    if (!fin) return;
    const message = this.fragments.length === 1 ? payload : Buffer.concat(this.fragments);
    this.fragments = [];
    this.fragmentsBytes = 0;
    this.messageHandler(message);
  }

  private finish(code: number, reason: string): void {
    if (this.ended) return;
    this.ended = true;
    clearInterval(this.keepAliveTimer);
    if (!this.socket.destroyed) this.socket.end();
    for (const handler of this.closeHandlers) handler(code, reason);
  }
}

/**
 * Hands each WebSocket upgrade `server` receives to `handle`, one place for the agent's and the
 * controller's listeners: whatever `handle` throws is logged through `warn` and answered 500, so
 * no upgrade is left hanging. `handle` refuses (refuseUpgrade) what it does not serve.
 */
export function routeUpgrades(
  server: Server | undefined,
  handle: (req: IncomingMessage, socket: Duplex, head: Buffer) => Promise<void>,
  warn: (message: string) => void,
): void {
  server?.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    handle(req, socket, head).catch((error: unknown) => {
      warn(`terminal: ${error instanceof Error ? error.message : String(error)}`);
      refuseUpgrade(socket, 500, 'the serial console could not be opened');
    });
  });
}

/** What a refused upgrade answers: a JSON error body, as the daemons' other errors. */
export function refuseUpgrade(
  socket: Duplex,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ statusCode: status, message });
  const reasons: Record<number, string> = {
    400: 'Bad Request',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'Not Found',
    409: 'Conflict',
    421: 'Misdirected Request',
    426: 'Upgrade Required',
    502: 'Bad Gateway',
    503: 'Service Unavailable',
  };
  const lines = [
    `HTTP/1.1 ${status} ${reasons[status] ?? 'Error'}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  if (socket.writable) socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
  else socket.destroy();
}

/**
 * Whether a request asks for a WebSocket this code can give (version 13, a well-formed key);
 * the problem in words when not.
 */
export function upgradeProblem(req: IncomingMessage): string | undefined {
  if ((req.headers.upgrade ?? '').toLowerCase() !== 'websocket') return 'not a WebSocket upgrade';
  if (req.method !== 'GET') return 'a WebSocket upgrade is a GET';
  if (req.headers['sec-websocket-version'] !== '13') return 'only WebSocket version 13 is spoken';
  if (!isWebSocketKey(req.headers['sec-websocket-key'])) return 'no valid Sec-WebSocket-Key';
  return undefined;
}

/** The offered subprotocols of a handshake (Sec-WebSocket-Protocol), in order. */
export function offeredProtocols(req: IncomingMessage): string[] {
  const header = req.headers['sec-websocket-protocol'];
  if (header === undefined) return [];
  return header
    .split(',')
    .map((protocol) => protocol.trim())
    .filter((protocol) => protocol !== '');
}

/**
 * Completes a server's handshake (upgradeProblem having found none) and opens the connection;
 * `protocol`: the subprotocol chosen from those offered.
 */
export function acceptUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  options: { protocol?: string; maxMessageBytes?: number } = {},
): WebSocketConnection {
  const accept = acceptKeyOf(req.headers['sec-websocket-key'] ?? '');
  const lines = [
    'HTTP/1.1 101 Switching Protocols',
    'Upgrade: websocket',
    'Connection: Upgrade',
    `Sec-WebSocket-Accept: ${accept}`,
    ...(options.protocol === undefined ? [] : [`Sec-WebSocket-Protocol: ${options.protocol}`]),
  ];
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  if ('setNoDelay' in socket && typeof socket.setNoDelay === 'function') {
    (socket as Duplex & { setNoDelay(on: boolean): void }).setNoDelay(true);
  }
  return new WebSocketConnection(socket, {
    role: 'server',
    head,
    ...(options.maxMessageBytes === undefined ? {} : { maxMessageBytes: options.maxMessageBytes }),
  });
}

/** A WebSocket the other side refused at its handshake: its status and its message. */
export class WebSocketRefusedError extends Error {
  constructor(
    readonly status: number,
    readonly refusal: string | undefined,
  ) {
    super(`the WebSocket was refused (${status})${refusal === undefined ? '' : `: ${refusal}`}`);
    this.name = 'WebSocketRefusedError';
  }
}

/** The longest refusal body a client reads. */
const MAX_REFUSAL_BYTES = 16 * 1024;

export interface OpenWebSocket {
  /** http://host:port, with the path and query to ask for. */
  url: URL;
  headers?: Record<string, string>;
  /** How long the connection and handshake may take. */
  timeoutMs: number;
  maxMessageBytes?: number;
}

/**
 * Opens a WebSocket as a client. Refused (any status but 101), it rejects with a
 * WebSocketRefusedError carrying the JSON `message` of the refusal when there is one;
 * unreachable, with the socket's error.
 */
export function openWebSocket(options: OpenWebSocket): Promise<WebSocketConnection> {
  const key = randomBytes(16).toString('base64');
  return new Promise((resolve, reject) => {
    const request = httpRequest(options.url, {
      method: 'GET',
      headers: {
        ...options.headers,
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': key,
      },
    });
    // A timer of its own, not an AbortSignal: an abort after the upgrade would end the socket.
    const timer = setTimeout(() => {
      request.destroy(new Error(`no WebSocket handshake within ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    request.on('upgrade', (response: IncomingMessage, socket: Duplex, head: Buffer) => {
      clearTimeout(timer);
      if (response.headers['sec-websocket-accept'] !== acceptKeyOf(key)) {
        socket.destroy();
        reject(
          new WebSocketRefusedError(502, 'the handshake answered a wrong Sec-WebSocket-Accept'),
        );
        return;
      }
      resolve(
        new WebSocketConnection(socket, {
          role: 'client',
          head,
          ...(options.maxMessageBytes === undefined
            ? {}
            : { maxMessageBytes: options.maxMessageBytes }),
        }),
      );
    });
    request.on('response', (response: IncomingMessage) => {
      clearTimeout(timer);
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_REFUSAL_BYTES) chunks.push(chunk);
        else response.destroy();
      });
      const done = (): void => {
        reject(new WebSocketRefusedError(response.statusCode ?? 0, refusalMessage(chunks)));
      };
      response.on('end', done);
      response.on('close', done);
    });
    request.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    request.end();
  });
}

function refusalMessage(chunks: Buffer[]): string | undefined {
  try {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { message?: unknown };
    return typeof body.message === 'string' ? body.message : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Joins two byte streams both ways until either ends, then ends the other: each side's
 * `write` returning false pauses the other's reading until it drains (a slow browser does
 * not make the node buffer a guest's output without bound).
 */
export function bridgeWebSocket(
  ws: WebSocketConnection,
  other: Duplex,
  onEnd: (why: string) => void,
): void {
  let ended = false;
  const end = (why: string, code = CLOSE_NORMAL): void => {
    if (ended) return;
    ended = true;
    ws.close(code, why);
    other.destroy();
    onEnd(why);
  };
  other.on('data', (chunk: Buffer) => {
    if (!ws.send(chunk)) {
      other.pause();
      ws.socket.once('drain', () => other.resume());
    }
  });
  ws.onMessage((data) => {
    if (!other.write(data)) {
      ws.socket.pause();
      other.once('drain', () => ws.socket.resume());
    }
  });
  other.on('end', () => end('the serial port closed'));
  other.on('close', () => end('the serial port closed'));
  other.on('error', () => end('the serial port failed', CLOSE_INTERNAL));
  ws.onClose((_code, reason) => end(reason || 'closed'));
}

/** Joins two WebSockets both ways (the controller between a page and an agent). */
export function relayWebSockets(
  a: WebSocketConnection,
  b: WebSocketConnection,
  onEnd: (why: string) => void,
): void {
  let ended = false;
  const end = (code: number, why: string): void => {
    if (ended) return;
    ended = true;
    // Neither side's words reach the other: the reason is for the log only.
    a.close(code, 'the console closed');
    b.close(code, 'the console closed');
    onEnd(why);
  };
  const pipe = (from: WebSocketConnection, to: WebSocketConnection): void => {
    let paused = false;
    from.onMessage((data) => {
      // Backpressure: a slow reader on `to` stops the reading of `from` until it drains (and
      // `to` itself closes with 1008 should its buffer still pass MAX_WRITE_BUFFER_BYTES).
      if (!to.send(data) && !paused) {
        paused = true;
        from.socket.pause();
        to.socket.once('drain', () => {
          paused = false;
          from.socket.resume();
        });
      }
    });
    from.onClose((code, reason) =>
      end(code === CLOSE_PROTOCOL_ERROR || code === CLOSE_TOO_BIG ? code : CLOSE_NORMAL, reason),
    );
  };
  pipe(a, b);
  pipe(b, a);
}
