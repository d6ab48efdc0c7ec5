/** The client side of a WebSocket handshake (the controller to an agent). */
import { randomBytes } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { acceptKeyOf } from './web-socket-upgrades';
import { WebSocketConnection } from './web-socket';

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
