import { request as httpRequest } from 'node:http';
import { Transform, TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { MAX_REPLICA_CHUNK_BYTES, ReplicaState, StartReplicaTransfer } from '@app/fleet-domain';
import { throttledFile } from './throttled-file';

/** The most of a peer's answer read: its JSON is a few hundred bytes. */
const MAX_ANSWER_BYTES = 64 * 1024;
/** A peer that says nothing for this long is given up (a chunk at a slow rate still moves). */
const PEER_TIMEOUT_MS = 60_000;

/**
 * Bytes per second shared by every copy the node sends: each piece waits its turn, so the
 * copies together never go faster (0: unlimited).
 */
export class Throttle {
  private nextFreeMs = 0;

  constructor(
    private readonly bytesPerSecond: number,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  /** Resolves once `bytes` may go. */
  async take(bytes: number): Promise<void> {
    if (this.bytesPerSecond <= 0) return;
    const now = this.nowMs();
    const start = Math.max(now, this.nextFreeMs);
    this.nextFreeMs = start + (bytes * 1000) / this.bytesPerSecond;
    const wait = start - now;
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }

  /** A Transform that lets each chunk through once the throttle allows it, counting it. */
  stream(counted: (bytes: number) => void = () => undefined): Transform {
    return new Transform({
      transform: (chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback) => {
        this.take(chunk.length).then(
          () => {
            counted(chunk.length);
            done(null, chunk);
          },
          (error: Error) => done(error),
        );
      },
    });
  }
}

/** A peer's refusal or failure, with its status when it answered (0: no answer). */
export class PeerCallError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** Where a copy goes: the peer's agent and the grant that lets this node write there. */
export interface PeerTarget {
  nodeId: string;
  address: string;
  grant: string;
}

/**
 * The peer's agent over node:http, as the heartbeat speaks (the agent loads no fetch): its
 * replica routes, with `Authorization: Bearer <grant>`.
 */
export class PeerTransport {
  constructor(
    private readonly throttle: Throttle,
    /** Aborted (the agent stopping): every call under way ends at once, the chunk's too. */
    private readonly signal?: AbortSignal,
  ) {}

  async state(peer: PeerTarget, vmId: string): Promise<ReplicaState> {
    return (await this.call(peer, 'GET', `/v1/replicas/${vmId}`)) as ReplicaState;
  }

  /** Sends `file` as one chain file; the peer's state once it took it. */
  async send(
    peer: PeerTarget,
    vmId: string,
    file: string,
    sizeBytes: number,
    request: StartReplicaTransfer,
    counted: (bytes: number) => void,
  ): Promise<ReplicaState> {
    const started = (await this.call(peer, 'POST', `/v1/replicas/${vmId}/transfers`, request)) as {
      transfer_id: string;
    };
    const transferId = encodeURIComponent(String(started.transfer_id));
    for (let offset = 0; offset < sizeBytes; offset += MAX_REPLICA_CHUNK_BYTES) {
      const length = Math.min(MAX_REPLICA_CHUNK_BYTES, sizeBytes - offset);
      await this.call(
        peer,
        'PUT',
        `/v1/replicas/${vmId}/transfers/${transferId}?offset=${offset}`,
        undefined,
        {
          length,
          body: () =>
            throttledFile(
              this.throttle,
              file,
              { start: offset, end: offset + length - 1 },
              counted,
            ),
        },
      );
    }
    return (await this.call(
      peer,
      'POST',
      `/v1/replicas/${vmId}/transfers/${transferId}/done`,
    )) as ReplicaState;
  }

  /** One JSON call of a peer's grant-authenticated route (the moves' too): its answer. */
  call(
    peer: PeerTarget,
    method: string,
    path: string,
    json?: unknown,
    raw?: { length: number; body: () => NodeJS.ReadableStream },
  ): Promise<unknown> {
    const { host, port } = splitAddress(peer.address);
    const payload = json === undefined ? undefined : Buffer.from(JSON.stringify(json), 'utf8');
    const headers: Record<string, string | number> = { Authorization: `Bearer ${peer.grant}` };
    if (payload) {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = payload.length;
    } else if (raw) {
      headers['Content-Type'] = 'application/octet-stream';
      headers['Content-Length'] = raw.length;
    }
    return new Promise<unknown>((resolve, reject) => {
      const request = httpRequest(
        { host, port, method, path, headers, timeout: PEER_TIMEOUT_MS, signal: this.signal },
        (response) => {
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size <= MAX_ANSWER_BYTES) chunks.push(chunk);
          });
          response.on('error', reject);
          response.on('end', () => {
            const status = response.statusCode ?? 0;
            const text = Buffer.concat(chunks).toString('utf8');
            let body: unknown;
            try {
              body = JSON.parse(text);
            } catch {
              body = undefined;
            }
            if (status >= 200 && status < 300 && typeof body === 'object' && body !== null) {
              resolve(body);
              return;
            }
            reject(
              new PeerCallError(
                `node ${peer.nodeId} answered ${method} ${path.split('?')[0]} with ${status}${peerMessage(body)}`,
                status,
              ),
            );
          });
        },
      );
      request.on('timeout', () =>
        request.destroy(new Error(`no answer within ${PEER_TIMEOUT_MS} ms`)),
      );
      request.on('error', (error) =>
        reject(new PeerCallError(`node ${peer.nodeId} at ${peer.address}: ${error.message}`, 0)),
      );
      if (raw) {
        pipeline(raw.body(), request).catch((error: Error) => request.destroy(error));
      } else {
        request.end(payload);
      }
    });
  }
}

/** `10.0.0.2:9100` or `[fd00::2]:9100`, as CopyPeer.address is validated. */
export function splitAddress(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  return {
    host: address.slice(0, colon).replace(/^\[|\]$/g, ''),
    port: Number(address.slice(colon + 1)),
  };
}

/** The peer's own message, printable and short: never more of its reply. */
function peerMessage(body: unknown): string {
  const message = (body as { message?: unknown } | undefined)?.message;
  const text = Array.isArray(message) ? message.join('; ') : message;
  if (typeof text !== 'string') return '';
  return `: ${text.replace(/[^\x20-\x7e]/g, '?').slice(0, 300)}`;
}
