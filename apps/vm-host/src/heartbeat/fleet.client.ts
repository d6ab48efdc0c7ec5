import { ClientRequest, IncomingMessage, RequestOptions, request as httpRequest } from 'node:http';
import { ID_PATTERN, MAX_REPLICAS_REPORTED, type FleetApi } from '@app/fleet-domain';

export type HeartbeatBody = FleetApi.components['schemas']['NodeHeartbeat'];
export type HeartbeatAnswer = FleetApi.components['schemas']['HeartbeatAnswer'];

/** What a 200 without a readable answer means: a controller of the original services says nothing more. */
const TAKEN: HeartbeatAnswer = { accepted: true };

const HEARTBEAT_PATH = '/v1/nodes/heartbeat' satisfies keyof FleetApi.paths;
/** Of an answer, only so much is read: a refusal's JSON `message`, or whether it was taken. */
const MAX_ANSWER_BODY_BYTES = 64 * 1024;

/** Longest controller message a failure log line quotes. */
const MAX_MESSAGE_CHARS = 300;

type Transport = (url: URL, options: RequestOptions) => ClientRequest;

/**
 * The controller's API as the agent sees it, typed from the committed OpenAPI document, so the
 * agent cannot drift from what the controller accepts. Sent with node:http, not fetch: fetch
 * (undici and its WebAssembly parser) would cost every node about 10 MB of memory.
 */
export class FleetClient {
  private readonly url: URL;
  private transport?: Promise<Transport>;

  /**
   * `headers` go with every request: the node token's Authorization, when it is set. A redirect
   * would carry the token elsewhere: node:http follows none, so a 3xx is a failed heartbeat.
   */
  constructor(
    baseUrl: string,
    private readonly headers: Record<string, string> = {},
  ) {
    this.url = new URL(`${baseUrl.replace(/\/+$/, '')}${HEARTBEAT_PATH}`);
  }

  /**
   * The controller's answer: whether it took the heartbeat. Throws with the reason when it
   * cannot be reached or does not answer 200.
   */
  async sendHeartbeat(body: HeartbeatBody, signal: AbortSignal): Promise<HeartbeatAnswer> {
    const send = await this.loadTransport();
    const payload = Buffer.from(JSON.stringify(body));
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const request = send(this.url, {
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
  private loadTransport(): Promise<Transport> {
    this.transport ??=
      this.url.protocol === 'https:'
        ? import('node:https').then((https) => https.request)
        : Promise.resolve(httpRequest);
    return this.transport;
  }
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
 * superseded_vm_ids are kept only as fleet ids (they name files on this node), at most 1024.
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
    if (wanted) {
      return {
        accepted: true,
        wanted_replica_vm_ids: wanted,
        ...(superseded.length > 0 ? { superseded_vm_ids: superseded } : {}),
      };
    }
    return superseded.length > 0 ? { accepted: true, superseded_vm_ids: superseded } : TAKEN;
  }
  const stored = body.stored_timestamp_utc;
  return typeof stored === 'string'
    ? { accepted: false, stored_timestamp_utc: stored.slice(0, MAX_MESSAGE_CHARS) }
    : { accepted: false };
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
