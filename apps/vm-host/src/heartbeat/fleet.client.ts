import { ClientRequest, IncomingMessage, RequestOptions, request as httpRequest } from 'node:http';
import { Logger } from '@nestjs/common';
import { describeRequestFailure } from '@app/daemon';
import {
  HEARTBEAT_PATH,
  ID_PATTERN,
  MAX_FENCE_AFTER_S,
  MAX_REPLICAS_REPORTED,
  MAX_VM_COPIES,
  MIN_FENCE_AFTER_S,
  type FleetApi,
} from '@app/fleet-domain';
import { meshRoutesOf } from '../mesh/mesh-answer';

export type HeartbeatBody = FleetApi.components['schemas']['NodeHeartbeat'];
export type HeartbeatAnswer = FleetApi.components['schemas']['HeartbeatAnswer'];

/** What a 200 without a readable answer means: a controller of the original services says nothing more. */
const TAKEN: HeartbeatAnswer = { accepted: true };

/**
 * Of an answer, only so much is read: a refusal's JSON `message`, or whether it was taken and
 * what comes with it (the routing mesh's table, about 100 bytes a route, the largest part).
 */
const MAX_ANSWER_BODY_BYTES = 512 * 1024;

/** Longest controller message a failure log line quotes. */
const MAX_MESSAGE_CHARS = 300;

type Transport = (url: URL, options: RequestOptions) => ClientRequest;

/** One controller of VM_FLEET_ENDPOINT: where its heartbeat goes, how logs name it. */
interface Endpoint {
  url: URL;
  forLogs: string;
  transport?: Promise<Transport>;
}

/**
 * The controller's API as the agent sees it, typed from the committed OpenAPI document, so the
 * agent cannot drift from what the controller accepts. Sent with node:http, not fetch: fetch
 * (undici and its WebAssembly parser) would cost every node about 10 MB of memory.
 *
 * With several controllers (VM_FLEET_ENDPOINT a list), each request goes first to the one that
 * answered last, then to the others in turn: a dead controller costs one failed try, not every
 * beat.
 */
export class FleetClient {
  private readonly logger = new Logger('Heartbeat');
  private readonly endpoints: Endpoint[];
  /** The endpoint tried first: the one that answered last. */
  private current = 0;
  /** Whether any controller answered yet (the first answer's controller is not a switch). */
  private answered = false;

  /**
   * `headers` go with every request: the node token's Authorization, when it is set. A redirect
   * would carry the token elsewhere: node:http follows none, so a 3xx is a failed heartbeat.
   * `attemptTimeoutMs`: with several controllers, the longest one try may take, so a silent
   * controller leaves the others time within the heartbeat's own timeout.
   */
  constructor(
    baseUrls: string | readonly string[],
    private readonly headers: Record<string, string> = {},
    private readonly attemptTimeoutMs?: number,
  ) {
    const urls = typeof baseUrls === 'string' ? [baseUrls] : baseUrls;
    this.endpoints = urls.map((baseUrl) => {
      const base = baseUrl.replace(/\/+$/, '');
      return { url: new URL(`${base}${HEARTBEAT_PATH}`), forLogs: forLogs(base) };
    });
  }

  /** The controller that answered last (the first one before any did), as logs name it. */
  get endpointForLogs(): string {
    return this.endpoints[this.current].forLogs;
  }

  /**
   * The controller's answer: whether it took the heartbeat. Each controller is tried in turn
   * until one answers 200; throws with the reason (every controller's, when there are several)
   * when none does.
   */
  async sendHeartbeat(body: HeartbeatBody, signal: AbortSignal): Promise<HeartbeatAnswer> {
    if (this.endpoints.length === 1) return this.sendTo(this.endpoints[0], body, signal);
    const failures: string[] = [];
    for (let tried = 0; tried < this.endpoints.length; tried += 1) {
      const index = (this.current + tried) % this.endpoints.length;
      const endpoint = this.endpoints[index];
      const attempt =
        this.attemptTimeoutMs === undefined
          ? signal
          : AbortSignal.any([signal, AbortSignal.timeout(this.attemptTimeoutMs)]);
      try {
        const answer = await this.sendTo(endpoint, body, attempt);
        if (index !== this.current && this.answered) {
          this.logger.warn(
            `heartbeat answered by ${endpoint.forLogs} (${failures.join('; ')}); sticking to it`,
          );
        }
        this.current = index;
        this.answered = true;
        return answer;
      } catch (error) {
        // The heartbeat's own deadline or the agent's shutdown: no time left for another.
        if (signal.aborted) throw error;
        failures.push(
          `${endpoint.forLogs}: ${describeRequestFailure(error, this.attemptTimeoutMs ?? 0)}`,
        );
      }
    }
    throw new Error(`no controller answered (${failures.join('; ')})`);
  }

  private async sendTo(
    endpoint: Endpoint,
    body: HeartbeatBody,
    signal: AbortSignal,
  ): Promise<HeartbeatAnswer> {
    const send = await this.loadTransport(endpoint);
    const payload = Buffer.from(JSON.stringify(body));
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const request = send(endpoint.url, {
        method: 'POST',
        headers: {
          ...this.headers,
          'Content-Type': 'application/json',
          'Content-Length': payload.length,
        },
        signal,
      });
      request.once('response', resolve);
      // An abort surfaces as the signal's reason (a timeout says so), not as a bare AbortError.
      request.once('error', (error) => reject(signal.aborted ? (signal.reason as Error) : error));
      request.end(payload);
    });
    if (response.statusCode === 200) return answerOf(await readJson(response));
    const detail = messageOf(await readJson(response));
    throw new Error(
      `controller answered ${response.statusCode}${detail === undefined ? '' : `: ${detail}`}`,
    );
  }

  /** node:https (and TLS) is loaded only for an https:// endpoint. */
  private loadTransport(endpoint: Endpoint): Promise<Transport> {
    endpoint.transport ??=
      endpoint.url.protocol === 'https:'
        ? import('node:https').then((https) => https.request)
        : Promise.resolve(httpRequest);
    return endpoint.transport;
  }
}

/** A base URL without the user:password@ it may carry. */
function forLogs(base: string): string {
  const url = new URL(base);
  url.username = '';
  url.password = '';
  return url.toString().replace(/\/+$/, '');
}

/** A JSON body, parsed; undefined when there is none, it is too long or not JSON. */
async function readJson(response: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_ANSWER_BODY_BYTES) {
        response.destroy();
        return undefined;
      }
      chunks.push(chunk);
    }
    return size === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
  } catch {
    return undefined;
  }
}

/** The `message` of a JSON error body, if it has one. */
function messageOf(body: unknown): string | undefined {
  const message = isObject(body) ? body.message : undefined;
  return typeof message === 'string' ? message.slice(0, MAX_MESSAGE_CHARS) : undefined;
}

/** The most superseded VM ids one answer is read for: as many as a heartbeat may list. */
const MAX_SUPERSEDED = 1024;

/**
 * Only an explicit `accepted: false` says the heartbeat was ignored; anything else, taken.
 * superseded_vm_ids are kept only as fleet ids (they name files on this node), at most 1024;
 * fence_after_s only as a whole number of seconds within its bounds (anything else: absent,
 * so the lease counts as not renewed).
 */
function answerOf(body: unknown): HeartbeatAnswer {
  if (!isObject(body)) return TAKEN;
  const ids = body.superseded_vm_ids;
  const superseded = Array.isArray(ids)
    ? ids
        .slice(0, MAX_SUPERSEDED)
        .filter((id): id is string => typeof id === 'string' && ID_PATTERN.test(id))
    : [];
  const wanted = wantedReplicasOf(body.wanted_replica_vm_ids);
  if (body.accepted !== false) {
    const fence = body.fence_after_s;
    const fenceAfterS =
      typeof fence === 'number' &&
      Number.isInteger(fence) &&
      fence >= MIN_FENCE_AFTER_S &&
      fence <= MAX_FENCE_AFTER_S
        ? fence
        : undefined;
    const copiesDefault = fenceAfterS === undefined ? undefined : copiesDefaultOf(body);
    const mesh = meshRoutesOf(body.mesh_routes);
    return {
      accepted: true,
      ...(mesh.length > 0 ? { mesh_routes: mesh } : {}),
      ...(wanted ? { wanted_replica_vm_ids: wanted } : {}),
      ...(superseded.length > 0 ? { superseded_vm_ids: superseded } : {}),
      ...(fenceAfterS !== undefined ? { fence_after_s: fenceAfterS } : {}),
      ...(copiesDefault !== undefined ? { copies_default: copiesDefault } : {}),
    };
  }
  const stored = body.stored_timestamp_utc;
  return typeof stored === 'string'
    ? { accepted: false, stored_timestamp_utc: stored.slice(0, MAX_MESSAGE_CHARS) }
    : { accepted: false };
}

/**
 * copies_default, read only beside fence_after_s and only as a whole 0..MAX_VM_COPIES
 * (anything else: absent, so a VM without a copies policy counts as protected).
 */
function copiesDefaultOf(body: Record<string, unknown>): number | undefined {
  const count = body.copies_default;
  return typeof count === 'number' &&
    Number.isInteger(count) &&
    count >= 0 &&
    count <= MAX_VM_COPIES
    ? count
    : undefined;
}

/**
 * The copies the controller still wants (fleet ids only, at most as many as a heartbeat
 * reports); undefined when it said nothing of them, or said it so that it cannot be read:
 * then nothing is removed.
 */
function wantedReplicasOf(ids: unknown): string[] | undefined {
  if (!Array.isArray(ids) || ids.length > MAX_REPLICAS_REPORTED) return undefined;
  if (!ids.every((id) => typeof id === 'string' && ID_PATTERN.test(id))) return undefined;
  return ids as string[];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
