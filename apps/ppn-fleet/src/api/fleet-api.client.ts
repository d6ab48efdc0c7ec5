import createClient, { Client, ClientOptions } from 'openapi-fetch';
import * as Wire from '@app/fleet-domain';
import { FleetApi, IDEMPOTENCY_KEY_HEADER } from '@app/fleet-domain';
import { printable } from '../terminal/printable';
import { AnswerShape, listOf, shapeOf } from './answer-check';
import type { CreateVmRequest, FleetStatus, FleetVm, NodeRecord } from './answers';
import { CliFailure, ExitCode } from './exit-codes';

export type { CreateVmRequest, FleetStatus, FleetVm, NodeRecord } from './answers';

/**
 * An answer: its parsed body, and the body as the controller sent it (what --json prints).
 * Reading `data` checks it against the API's wire class (answer-check.ts) and throws
 * UNEXPECTED_ANSWER (exit 1), naming the field, when it is not as the API defines it.
 */
export interface Answer<T> {
  readonly data: T;
  readonly json: string;
}

/**
 * Longest a request may take: a create's dispatch ends within 20 s (CREATE_DISPATCH_DEADLINE_MS),
 * so a controller silent for longer is not answering.
 */
export const REQUEST_TIMEOUT_MS = 30_000;

/** How often, and after how long, a create whose connection was lost is sent again. */
export const CREATE_RETRY_DELAYS_MS = [1_000, 2_000, 4_000];

/**
 * Largest answer body the CLI reads (16 MiB: a listing of thousands of VMs fits many times over).
 * A controller, or whatever answers in its place, sending more cannot fill the CLI's memory.
 */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/** The message of an answer cut off at MAX_ANSWER_BYTES. */
export const ANSWER_TOO_LARGE = `answer larger than ${MAX_ANSWER_BYTES} bytes`;

/** The message of an answer that is JSON but not of the shape the contract gives it. */
export const UNEXPECTED_ANSWER = 'unexpected answer from the controller';

/** Statuses whose Response cannot have a body. */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/** An answer whose body went past `maxBytes`: reading stopped there and the body was cancelled. */
class AnswerTooLarge extends Error {}

/** What an openapi-fetch call gives back, as far as the CLI reads it. */
interface RawAnswer {
  data?: string;
  error?: unknown;
  response: Response;
}

/**
 * The controller's API, typed from openapi/fleet.openapi.json (FleetApi): paths, parameters and
 * bodies cannot drift from what the controller serves. Every failure becomes a CliFailure with
 * the exit code scripts branch on.
 */
export class FleetApiClient {
  private readonly client: Client<FleetApi.paths>;
  private readonly reader: AnswerReader;

  constructor(
    readonly endpoint: string,
    apiToken: string | undefined,
    fetchImplementation: typeof fetch,
    private readonly sleep: (ms: number) => Promise<void>,
  ) {
    this.client = createClient<FleetApi.paths>(
      clientOptions(endpoint, apiToken, fetchImplementation),
    );
    this.reader = new AnswerReader(endpoint);
  }

  fleet(): Promise<Answer<FleetStatus>> {
    return this.reader.call(
      () => this.client.GET('/v1/fleet', { parseAs: 'text', signal: timeout() }),
      shapeOf(Wire.FleetStatus),
    );
  }

  nodes(): Promise<Answer<NodeRecord[]>> {
    return this.reader.call(
      () => this.client.GET('/v1/nodes', { parseAs: 'text', signal: timeout() }),
      listOf(Wire.NodeRecord),
    );
  }

  node(nodeId: string): Promise<Answer<NodeRecord>> {
    return this.reader.call(
      () =>
        this.client.GET('/v1/nodes/{node_id}', {
          params: { path: { node_id: nodeId } },
          parseAs: 'text',
          signal: timeout(),
        }),
      shapeOf(Wire.NodeRecord),
    );
  }

  vms(tenantId?: string): Promise<Answer<FleetVm[]>> {
    return this.reader.call(
      () =>
        this.client.GET('/v1/vms', {
          params: { query: tenantId === undefined ? {} : { tenant_id: tenantId } },
          parseAs: 'text',
          signal: timeout(),
        }),
      listOf(Wire.FleetVm),
    );
  }

  /**
   * POST /v1/vms with `idempotencyKey`. A connection lost before an answer is retried with the
   * same key, so the controller makes the VM once however many times it was asked.
   */
  async createVm(body: CreateVmRequest, idempotencyKey: string): Promise<Answer<FleetVm>> {
    // Whether every attempt so far provably never reached the controller.
    let neverSent = true;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.reader.call(
          () =>
            this.client.POST('/v1/vms', {
              body,
              headers: { [IDEMPOTENCY_KEY_HEADER]: idempotencyKey },
              parseAs: 'text',
              signal: timeout(),
            }),
          shapeOf(Wire.FleetVm),
        );
      } catch (error) {
        const delay = CREATE_RETRY_DELAYS_MS[attempt];
        if (!(error instanceof CliFailure) || error.exitCode !== ExitCode.Unreachable) throw error;
        neverSent &&= error.reach.neverSent === true;
        if (!delay) throw new CliFailure(error.message, error.exitCode, { neverSent });
        await this.sleep(delay);
      }
    }
  }

  /**
   * Throws (exit 2) unless GET /v1/fleet, which only the controller serves, answers as the
   * controller does (an agent answers 404); `done`: what the message says was not done.
   */
  async expectController(done: string): Promise<void> {
    const notController = (answered: string): CliFailure =>
      new CliFailure(
        `${this.endpoint} is not a fleet controller: GET /v1/fleet ${answered}, which the controller's API always answers (is it an agent's port? the controller's API listens on 9203); nothing was ${done}`,
        ExitCode.Usage,
      );
    try {
      // `.data` checks the answer's shape.
      void (await this.fleet()).data;
    } catch (error) {
      if (!(error instanceof CliFailure) || error.exitCode !== ExitCode.Refused) throw error;
      // A tenant's token: the controller refuses it GET /v1/fleet (an agent has no 403 there).
      if (error.reach.status === 403) return;
      if (error.reach.status === 404) throw notController('answered 404');
      if (error.reach.status === undefined)
        throw notController(`answered what it does not (${error.message})`);
      throw error;
    }
  }

  /**
   * `forget`: a VM of a node that dropped out for good is forgotten instead of refused (409).
   * Sent only once the endpoint proved to be a controller: an agent's own API has a
   * `DELETE /v1/vms/{vm_id}` too, which destroys the VM (ignoring `?forget`), so a wrong port
   * must be refused before anything is deleted.
   */
  async deleteVm(vmId: string, forget = false): Promise<void> {
    await this.expectController(forget ? 'forgotten' : 'deleted');
    await this.reader.call(() =>
      this.client.DELETE('/v1/vms/{vm_id}', {
        params: { path: { vm_id: vmId }, query: forget ? { forget: 'true' } : {} },
        parseAs: 'text',
        signal: timeout(),
      }),
    );
  }
}

/**
 * Sends requests to one of the controller's listeners (its API, or its operations listener)
 * and reads the answers: every failure becomes a CliFailure with the exit code scripts branch
 * on, an answer's body is parsed and, when read, checked.
 */
export class AnswerReader {
  constructor(
    readonly endpoint: string,
    /** What answers at the endpoint, as messages name it. */
    private readonly listener = 'the controller',
    /** The operations listener: a refused connection gets the hint naming --ops-endpoint. */
    private readonly opsListener = false,
  ) {}

  /** Sends a request; its answer's body parsed and, given its `shape`, checked when read. */
  async call<T>(send: () => Promise<RawAnswer>, shape?: AnswerShape): Promise<Answer<T>> {
    let answer: RawAnswer;
    try {
      answer = await send();
    } catch (error) {
      if (error instanceof AnswerTooLarge) {
        throw new CliFailure(
          `${this.listener} at ${this.endpoint} sent an ${ANSWER_TOO_LARGE}`,
          ExitCode.Refused,
        );
      }
      const problem = transportProblem(error);
      // fetch refuses some ports outright (6000, 6665-6669...): the endpoint is wrong, not down.
      if (problem === 'bad port') {
        const port = new URL(this.endpoint).port;
        throw new CliFailure(
          `the endpoint ${this.endpoint} names port ${port}, one that no HTTP client may connect to (an unsafe port, as browsers block it); nothing was sent. The controller's API listens on 9203, its operations listener on 9206`,
          ExitCode.Usage,
        );
      }
      // The controller's own host, with VM_FLEET_OPS_ADDR on its mesh address: say where to look.
      const hint = this.opsListener && problem === 'ECONNREFUSED' ? OPS_ENDPOINT_HINT : '';
      throw new CliFailure(
        `cannot reach ${this.listener} at ${this.endpoint}: ${problem}${hint}`,
        ExitCode.Unreachable,
        { neverSent: NOT_CONNECTED.has(problem) },
      );
    }
    const { response } = answer;
    if (!response.ok) throw refusal(response.status, answer.error);
    const json = answer.data ?? '';
    let data: unknown;
    try {
      data = json === '' ? undefined : JSON.parse(json);
    } catch {
      throw new CliFailure(
        `${this.listener} at ${this.endpoint} answered ${response.status} with a body that is not JSON`,
        ExitCode.Refused,
      );
    }
    const endpoint = this.endpoint;
    return {
      json,
      // Checked when read: --json prints the answer without reading it.
      get data(): T {
        const fault = shape?.(data);
        if (fault !== undefined) {
          // The field's path alone (the wire class's names), never the answer's text.
          throw new CliFailure(
            `${UNEXPECTED_ANSWER} at ${endpoint} (${response.status}: ${fault} not as the API gives it)`,
            ExitCode.Refused,
          );
        }
        return data as T;
      },
    };
  }
}

/** How every client of the CLI calls the controller: its token, capped answers, no redirect. */
export function clientOptions(
  endpoint: string,
  apiToken: string | undefined,
  fetchImplementation: typeof fetch,
): ClientOptions {
  return {
    baseUrl: endpoint,
    fetch: cappedFetch(fetchImplementation, MAX_ANSWER_BYTES),
    headers: apiToken === undefined ? {} : { Authorization: `Bearer ${apiToken}` },
    // A redirect would carry the token to another address: it is a failure like any other.
    redirect: 'manual',
  };
}

/**
 * `fetch` whose answers' bodies are read here, at most `maxBytes` of them (a Content-Length
 * over it refused before reading), then handed on whole: neither a success's body nor an
 * error's can grow past the cap. Past it the body is cancelled and AnswerTooLarge thrown.
 */
export function cappedFetch(fetchImplementation: typeof fetch, maxBytes: number): typeof fetch {
  return async (input, init) => {
    const response = await fetchImplementation(input, init);
    const body = await readCapped(response, maxBytes);
    return new Response(NULL_BODY_STATUSES.has(response.status) ? null : body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

async function readCapped(response: Response, maxBytes: number): Promise<Uint8Array | null> {
  const declared = response.headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw new AnswerTooLarge();
  }
  if (response.body === null) return null;
  const reader: ReadableStreamDefaultReader<Uint8Array> = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = (await reader.read()) as { done: boolean; value?: Uint8Array };
    if (done || value === undefined) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new AnswerTooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

export function timeout(): AbortSignal {
  return AbortSignal.timeout(REQUEST_TIMEOUT_MS);
}

/**
 * The most of an API message printed: far more than any placement explanation, far less than
 * what whatever answers at the endpoint may send (up to MAX_ANSWER_BYTES).
 */
const MAX_MESSAGE_CHARS = 16_384;

/** The failure of an answered request: the API's message, and what to do about a 401. */
export function refusal(status: number, body: unknown): CliFailure {
  const message =
    typeof body === 'object' &&
    body !== null &&
    typeof (body as { message?: unknown }).message === 'string'
      ? printable((body as { message: string }).message.slice(0, MAX_MESSAGE_CHARS))
      : `the controller answered ${status}`;
  const hint =
    status === 401
      ? '\nset VM_FLEET_API_TOKEN (or VM_FLEET_API_TOKEN_FILE) to the API token of the controller'
      : '';
  return new CliFailure(`${message}${hint}`, ExitCode.Refused, { status });
}

/** Where the operations listener refused a connection: the hint that says how to give its address. */
export const OPS_ENDPOINT_HINT =
  "\nthe operations listener is at the controller's VM_FLEET_OPS_ADDR (default 127.0.0.1:9206, its own host only): give that address with --ops-endpoint or VM_FLEET_OPS_ENDPOINT, e.g. http://10.8.0.1:9206";

/** Socket errors that say the connection was never made: nothing of the request was sent. */
const NOT_CONNECTED = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'ENOTFOUND',
]);

/**
 * Why a request got no answer, in a few words: the socket error's code when there is one, else
 * the innermost cause's message (fetch's own says only "fetch failed").
 */
export function transportProblem(error: unknown): string {
  let message = error instanceof Error ? error.message : String(error);
  for (
    let cause = error, depth = 0;
    typeof cause === 'object' && cause !== null && depth < 4;
    depth++
  ) {
    const { name, code } = cause as { name?: unknown; code?: unknown };
    if (name === 'TimeoutError') return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
    if (typeof code === 'string') return code;
    if (cause instanceof Error) message = cause.message;
    cause = (cause as { cause?: unknown }).cause;
  }
  return message;
}
