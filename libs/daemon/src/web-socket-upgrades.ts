/** The server side of a WebSocket handshake: node:http's upgrades routed, refused or accepted. */
import { createHash } from 'node:crypto';
import { type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketConnection } from './web-socket';

const ACCEPT_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

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
