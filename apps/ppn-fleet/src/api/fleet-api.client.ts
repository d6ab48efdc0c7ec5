import createClient, { Client } from 'openapi-fetch';
import { CONTROL_CHARACTERS, FleetApi, IDEMPOTENCY_KEY_HEADER } from '@app/fleet-domain';
import { CliFailure, ExitCode } from './exit-codes';

export type FleetStatus = FleetApi.components['schemas']['FleetStatus'];
export type NodeRecord = FleetApi.components['schemas']['NodeRecord'];
export type FleetVm = FleetApi.components['schemas']['FleetVm'];
export type CreateVmRequest = FleetApi.components['schemas']['CreateVmRequest'];

/** An answer: its parsed body, and the body as the controller sent it (what --json prints). */
export interface Answer<T> {
  data: T;
  json: string;
}

/**
 * Longest a request may take: a create's dispatch ends within 20 s (CREATE_DISPATCH_DEADLINE_MS),
 * so a controller silent for longer is not answering.
 */
export const REQUEST_TIMEOUT_MS = 30_000;

/** How often, and after how long, a create whose connection was lost is sent again. */
export const CREATE_RETRY_DELAYS_MS = [1_000, 2_000, 4_000];

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

  constructor(
    readonly endpoint: string,
    apiToken: string | undefined,
    fetchImplementation: typeof fetch,
    private readonly sleep: (ms: number) => Promise<void>,
  ) {
    this.client = createClient<FleetApi.paths>({
      baseUrl: endpoint,
      fetch: fetchImplementation,
      headers: apiToken === undefined ? {} : { Authorization: `Bearer ${apiToken}` },
      // A redirect would carry the token to another address: it is a failure like any other.
      redirect: 'manual',
    });
  }

  fleet(): Promise<Answer<FleetStatus>> {
    return this.call(() => this.client.GET('/v1/fleet', { parseAs: 'text', signal: timeout() }));
  }

  nodes(): Promise<Answer<NodeRecord[]>> {
    return this.call(() => this.client.GET('/v1/nodes', { parseAs: 'text', signal: timeout() }));
  }

  node(nodeId: string): Promise<Answer<NodeRecord>> {
    return this.call(() =>
      this.client.GET('/v1/nodes/{node_id}', {
        params: { path: { node_id: nodeId } },
        parseAs: 'text',
        signal: timeout(),
      }),
    );
  }

  vms(tenantId?: string): Promise<Answer<FleetVm[]>> {
    return this.call(() =>
      this.client.GET('/v1/vms', {
        params: { query: tenantId === undefined ? {} : { tenant_id: tenantId } },
        parseAs: 'text',
        signal: timeout(),
      }),
    );
  }

  /**
   * POST /v1/vms with `idempotencyKey`. A connection lost before an answer is retried with the
   * same key, so the controller makes the VM once however many times it was asked.
   */
  async createVm(body: CreateVmRequest, idempotencyKey: string): Promise<Answer<FleetVm>> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.call(() =>
          this.client.POST('/v1/vms', {
            body,
            headers: { [IDEMPOTENCY_KEY_HEADER]: idempotencyKey },
            parseAs: 'text',
            signal: timeout(),
          }),
        );
      } catch (error) {
        const delay = CREATE_RETRY_DELAYS_MS[attempt];
        if (!(error instanceof CliFailure) || error.exitCode !== ExitCode.Unreachable || !delay) {
          throw error;
        }
        await this.sleep(delay);
      }
    }
  }

  /** `forget`: a VM of a node that dropped out for good is forgotten instead of refused (409). */
  async deleteVm(vmId: string, forget = false): Promise<void> {
    await this.call(() =>
      this.client.DELETE('/v1/vms/{vm_id}', {
        params: { path: { vm_id: vmId }, query: forget ? { forget: 'true' } : {} },
        parseAs: 'text',
        signal: timeout(),
      }),
    );
  }

  private async call<T>(send: () => Promise<RawAnswer>): Promise<Answer<T>> {
    let answer: RawAnswer;
    try {
      answer = await send();
    } catch (error) {
      throw new CliFailure(
        `cannot reach the controller at ${this.endpoint}: ${transportProblem(error)}`,
        ExitCode.Unreachable,
      );
    }
    const { response } = answer;
    if (!response.ok) throw refusal(response.status, answer.error);
    const json = answer.data ?? '';
    try {
      return { data: (json === '' ? undefined : JSON.parse(json)) as T, json };
    } catch {
      throw new CliFailure(
        `the controller at ${this.endpoint} answered ${response.status} with a body that is not JSON`,
        ExitCode.Refused,
      );
    }
  }
}

function timeout(): AbortSignal {
  return AbortSignal.timeout(REQUEST_TIMEOUT_MS);
}

/** The controller's message as it wrote it, only made safe for a terminal. */
export function printable(text: string): string {
  return text.replace(CONTROL_CHARACTERS, '?');
}

/** The failure of an answered request: the API's message, and what to do about a 401. */
export function refusal(status: number, body: unknown): CliFailure {
  const message =
    typeof body === 'object' &&
    body !== null &&
    typeof (body as { message?: unknown }).message === 'string'
      ? printable((body as { message: string }).message)
      : `the controller answered ${status}`;
  const hint =
    status === 401
      ? '\nset VM_FLEET_API_TOKEN (or VM_FLEET_API_TOKEN_FILE) to the API token of the controller'
      : '';
  return new CliFailure(`${message}${hint}`, ExitCode.Refused);
}

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
