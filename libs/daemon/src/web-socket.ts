import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import {
  CLOSE_GOING_AWAY,
  CLOSE_NORMAL,
  CLOSE_POLICY,
  CLOSE_PROTOCOL_ERROR,
  CLOSE_TOO_BIG,
  DEFAULT_MAX_MESSAGE_BYTES,
  Frame,
  FrameDecoder,
  MAX_REASON_BYTES,
  MAX_WRITE_BUFFER_BYTES,
  Opcode,
  PONG_WRITE_BUFFER_LIMIT,
  WebSocketProtocolError,
  encodeFrame,
} from './web-socket-frames';

/**
 * The small part of WebSocket (RFC 6455) the serial terminals need, over node:http's upgrade:
 * the handshake on both sides, binary and text messages (fragmented or not), ping/pong and
 * close; no extensions (permessage-deflate is never agreed). Every frame and message is bounded
 * (`maxMessageBytes`): a larger one closes the connection (1009) before its payload is kept.
 * This file: an open connection; its frames, its handshake's two sides and its bridges are in
 * the web-socket-*.ts files beside it.
 */

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
