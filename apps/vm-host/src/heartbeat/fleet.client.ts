import { ClientRequest, IncomingMessage, RequestOptions, request as httpRequest } from 'node:http';
import type { components, paths } from './fleet-api.generated';

export type HeartbeatBody = components['schemas']['NodeHeartbeat'];

const HEARTBEAT_PATH = '/v1/nodes/heartbeat' satisfies keyof paths;
/** Of a refusal, only its JSON `message` is kept; a longer body is not read further. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

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

  /** Throws with the reason when the controller cannot be reached or does not answer 200. */
  async sendHeartbeat(body: HeartbeatBody, signal: AbortSignal): Promise<void> {
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
    if (response.statusCode === 200) {
      response.resume();
      return;
    }
    const detail = await readMessage(response);
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

/** The `message` of a JSON error body, if it has one. */
async function readMessage(response: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_ERROR_BODY_BYTES) {
        response.destroy();
        return undefined;
      }
      chunks.push(chunk);
    }
    const message = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { message?: unknown })
      .message;
    return typeof message === 'string' ? message.slice(0, MAX_MESSAGE_CHARS) : undefined;
  } catch {
    return undefined;
  }
}
