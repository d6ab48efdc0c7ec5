/** A WebSocket joined to a byte stream or to another WebSocket, both ways. */
import type { Duplex } from 'node:stream';
import {
  CLOSE_INTERNAL,
  CLOSE_NORMAL,
  CLOSE_PROTOCOL_ERROR,
  CLOSE_TOO_BIG,
} from './web-socket-frames';
import { WebSocketConnection } from './web-socket';

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
