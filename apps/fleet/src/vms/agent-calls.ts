import { Logger } from '@nestjs/common';
import createClient, { Client } from 'openapi-fetch';
import {
  describeRequestFailure,
  findCostlyJson,
  summarizeProblems,
  validateInput,
} from '@app/daemon';
import {
  AGENT_CONNECT_TIMEOUT_MS,
  AGENT_REQUEST_TIMEOUT_MS,
  NodeState,
  agentErrorMessage,
} from '@app/fleet-domain';
import { NodeTokens } from '../nodes/node-tokens';
import type { paths } from './vm-host-api.generated';
import {
  AGENT_CONNECT_TIMEOUT_CODE,
  AGENT_LARGE_REPLY_MAX_BYTES,
  AGENT_REPLY_MAX_BYTES,
  UnusableAgentReplyError,
  agentFetch,
} from './agent-http.transport';
import { NodeRefusedVmError } from './vms.errors';

/** How long the controller waits for an agent; a provider so tests can shorten it. */
export class VmHostClientSettings {
  timeoutMs = AGENT_REQUEST_TIMEOUT_MS;
  /** For the connection alone, within timeoutMs: past it, the agent never saw the request. */
  connectTimeoutMs = AGENT_CONNECT_TIMEOUT_MS;
}

/**
 * What a failed call says of the node, in one word, for its dispatch record and the refusals
 * that show it: `unreachable` for any transport failure (refused, reset, no route, no answer
 * in time), `failed` for any answer that was not a VM (whatever status or body). Never more:
 * a refusal must not tell a prober what listens at an address. The log has the detail.
 */
export type AgentFailureReason = 'unreachable' | 'failed';

/**
 * The agent could not be reached, timed out, failed, or answered something unusable; `reason`
 * says which of the two (see AgentFailureReason). `neverReached`: the request provably did not
 * reach the agent (refused, no route, not sent for want of a token) or the agent made nothing
 * (401: its guard refused the token before doing anything; 503), so another node may take it
 * without the risk of a second VM.
 */
export class AgentCallError extends Error {
  constructor(
    message: string,
    readonly reason: AgentFailureReason,
    readonly neverReached: boolean,
  ) {
    super(message);
  }
}

/** Socket errors that say the connection was never made: the agent saw nothing of the request. */
const NOT_CONNECTED = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  AGENT_CONNECT_TIMEOUT_CODE,
]);

/** Whether a failed fetch never connected; the code may sit a level or two down its causes. */
export function neverConnected(error: unknown): boolean {
  // Duck-typed: errors from fetch's internals may come from another realm (jest's sandbox).
  for (
    let cause = error, depth = 0;
    typeof cause === 'object' && cause !== null && depth < 4;
    depth++
  ) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string') return NOT_CONNECTED.has(code);
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}

/** Where a node's agent listens, and the credential its last heartbeat was taken with. */
export type AgentAddress = Pick<NodeState, 'node_id' | 'wg_ip' | 'spawn_port' | 'credential'>;

/** The reply as JSON, or undefined when it is not JSON (or costlier to parse than any reply). */
export function parseReply(text: string | undefined): unknown {
  if (!text || findCostlyJson(Buffer.from(text)) !== undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * An agent's answer to an operator's action or read: the validated reply, or its refusal (404,
 * 409, 422) with its JSON error message when it gave one (cleaned and shortened, see
 * agentErrorMessage), for the caller to put in its own words. Anything else is thrown as an
 * AgentCallError.
 */
export type AgentAnswer<T> =
  | { kind: 'answered'; value: T }
  | { kind: 'refused'; status: 404 | 409 | 422; message: string | undefined };

/** The refusals an agent's operator routes answer with, each passed to the caller to word. */
export const OPERATION_REFUSALS = new Set([404, 409, 422]);

/** A refusal the controller passes on (422, 507; a 500 as 502), when the agent said why in JSON. */
export function refusal(
  node: AgentAddress,
  status: number,
  body: unknown,
): NodeRefusedVmError | undefined {
  if (status !== 422 && status !== 507 && status !== 500) return undefined;
  const message = agentErrorMessage(body);
  return message === undefined ? undefined : new NodeRefusedVmError(node.node_id, status, message);
}

/**
 * A 502 names the node and the status. Of the body it relays only the agent's own error
 * message, and only from a JSON error body (an object with a string `message`), shortened and
 * without control characters: whatever else answered at the agent's address (another service,
 * a proxy's HTML page) is never passed on to the caller.
 */
export function failure(node: AgentAddress, status: number, body: unknown): AgentCallError {
  const message = agentErrorMessage(body);
  const detail = message === undefined ? ' (no JSON error message)' : `: ${message}`;
  return new AgentCallError(
    `agent of node ${node.node_id} answered ${status}${detail}`,
    'failed',
    // The agent's 503: it could not make VMs at all (no base image), so it made none. Its 401:
    // its guard refused the token before anything was done (whatever listens there does not
    // take the token this node heartbeats with). Its 409 to a spawn: the vm_id is taken there,
    // or the spawn's deadline had passed by its clock; either way nothing was made.
    status === 503 || status === 401 || status === 409,
  );
}

/**
 * One call of a node agent's API, as VmHostClient makes each: with the token the node
 * heartbeats with, bounded in time and size, its reply validated; every failure an
 * AgentCallError whose words are the same whatever answered (the detail logged).
 */
export class AgentCalls {
  constructor(
    private readonly settings: VmHostClientSettings,
    private readonly nodeTokens: NodeTokens,
    private readonly logger: Logger,
  ) {}

  /** One call of an operator's route: its reply validated as `wireClass`, or its refusal. */
  async operate<T extends object>(
    node: AgentAddress,
    path: string,
    wireClass: new () => T,
    send: (
      client: Client<paths>,
      signal: AbortSignal,
    ) => Promise<{ data?: string; error?: unknown; response: Response }>,
    timeoutMs = this.settings.timeoutMs,
  ): Promise<AgentAnswer<T>> {
    const { data, error, response } = await this.call(
      node,
      path,
      timeoutMs,
      send,
      AGENT_LARGE_REPLY_MAX_BYTES,
    );
    if (OPERATION_REFUSALS.has(response.status)) {
      return {
        kind: 'refused',
        status: response.status as 404 | 409 | 422,
        message: agentErrorMessage(error),
      };
    }
    if (!response.ok) throw failure(node, response.status, error);
    return {
      kind: 'answered',
      value: await this.validated(node, path, wireClass, parseReply(data)),
    };
  }

  /** The reply as `wireClass`, or an AgentCallError saying it answered unusably (detail logged). */
  async validated<T extends object>(
    node: AgentAddress,
    path: string,
    wireClass: new () => T,
    body: unknown,
    at = '',
  ): Promise<T> {
    const { instance, problems } =
      typeof body === 'object' && body !== null && !Array.isArray(body)
        ? await validateInput(wireClass, body, 'body')
        : { instance: undefined, problems: ['not a JSON object'] };
    if (!instance)
      throw this.unusable(
        node,
        path,
        problems.map((problem) => at + problem),
      );
    return instance;
  }

  unusable(node: AgentAddress, path: string, problems: string[]): AgentCallError {
    // What was wrong goes to the log only: the client's words stay the same whatever answered.
    this.logger.warn(
      `node ${node.node_id}: ${path} answered unusably: ${summarizeProblems(problems)}`,
    );
    return new AgentCallError(`agent of node ${node.node_id} answered unusably`, 'failed', false);
  }

  async call<T extends { response: Response }>(
    node: AgentAddress,
    path: string,
    timeoutMs: number,
    send: (client: Client<paths>, signal: AbortSignal) => Promise<T>,
    maxReplyBytes = AGENT_REPLY_MAX_BYTES,
  ): Promise<T> {
    const host = node.wg_ip.includes(':') ? `[${node.wg_ip}]` : node.wg_ip;
    const baseUrl = `http://${host}:${node.spawn_port}`;
    // Exactly the token of the kind the node's last heartbeat was taken with, never another
    // (see NodeTokens.forAgent); none the controller has: not called at all.
    const auth = this.nodeTokens.forAgent(node.node_id, node.credential);
    if ('unusable' in auth) {
      this.logger.warn(`node ${node.node_id}: ${path} not sent: ${auth.unusable}`);
      throw new AgentCallError(
        `agent of node ${node.node_id} was not called: this controller has no token of the kind the node heartbeats with`,
        'failed',
        true,
      );
    }
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      return await send(
        createClient<paths>({
          baseUrl,
          fetch: (request: Request) =>
            agentFetch(request, this.settings.connectTimeoutMs, maxReplyBytes),
          headers: auth.token === undefined ? {} : { Authorization: `Bearer ${auth.token}` },
        }),
        signal,
      );
    } catch (error) {
      // The answer reads the same whatever is at the other end (refused, reset, silent; a reply
      // too large or not HTTP): the caller learns the node is unreachable or answered unusably,
      // not what listens there. The log has the detail.
      if (error instanceof UnusableAgentReplyError) {
        this.logger.warn(`node ${node.node_id}: ${path} at ${baseUrl}: ${error.message}`);
        throw new AgentCallError(
          `agent of node ${node.node_id} answered unusably`,
          'failed',
          false,
        );
      }
      this.logger.warn(
        `node ${node.node_id}: ${path} at ${baseUrl} failed: ${describeRequestFailure(error, timeoutMs)}`,
      );
      const timedOut = error instanceof DOMException && error.name === 'TimeoutError';
      throw new AgentCallError(
        `agent of node ${node.node_id} could not be reached`,
        'unreachable',
        !timedOut && neverConnected(error),
      );
    }
  }
}
