/** WebSocket frames (RFC 6455 5): their opcodes, close codes and bounds, encoded and decoded. */

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
export const MAX_REASON_BYTES = MAX_CONTROL_PAYLOAD - 2;

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
