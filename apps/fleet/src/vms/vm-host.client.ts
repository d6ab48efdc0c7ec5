import { Injectable, Logger } from '@nestjs/common';
import createClient, { Client } from 'openapi-fetch';
import {
  WebSocketConnection,
  WebSocketRefusedError,
  describeRequestFailure,
  findCostlyJson,
  openWebSocket,
  summarizeProblems,
  validateInput,
} from '@app/daemon';
import {
  AGENT_CONNECT_TIMEOUT_MS,
  AgentMoveOutRequest,
  AgentMovedOut,
  AgentRestoreRequest,
  AgentRestoredVm,
  AGENT_REQUEST_TIMEOUT_MS,
  CopyPlan,
  IDEMPOTENCY_KEY_HEADER,
  NodeState,
  RestartVmRequest,
  RestorePoints,
  SpawnVmRequest,
  StopVmRequest,
  VmBackups,
  VmConsole,
  VmConsoleQuery,
  VmLifeCycle,
  VmRecord,
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
function neverConnected(error: unknown): boolean {
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
type AgentAddress = Pick<NodeState, 'node_id' | 'wg_ip' | 'spawn_port' | 'credential'>;

/** The reply as JSON, or undefined when it is not JSON (or costlier to parse than any reply). */
function parseReply(text: string | undefined): unknown {
  if (!text || findCostlyJson(Buffer.from(text)) !== undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** What the agent answered a spawn with; `replayed`: it already had this VM for the key (200). */
export interface Spawned {
  vm: VmRecord;
  replayed: boolean;
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
const OPERATION_REFUSALS = new Set([404, 409, 422]);

/** Calls a node agent's local API at http://{wg_ip}:{spawn_port}, typed from its OpenAPI document. */
@Injectable()
export class VmHostClient {
  private readonly logger = new Logger('Vms');

  constructor(
    private readonly settings: VmHostClientSettings,
    private readonly nodeTokens: NodeTokens,
  ) {}

  /** `spawnKey`: the Idempotency-Key the agent keeps with the VM (see SPAWN_KEY_PATTERN). */
  async spawn(
    node: AgentAddress,
    request: SpawnVmRequest,
    spawnKey: string,
    timeoutMs = this.settings.timeoutMs,
  ): Promise<Spawned> {
    const { data, error, response } = await this.call(
      node,
      '/v1/spawn',
      timeoutMs,
      (client, signal) =>
        client.POST('/v1/spawn', {
          body: request,
          headers: { [IDEMPOTENCY_KEY_HEADER]: spawnKey },
          signal,
          parseAs: 'text',
        }),
    );
    if (!response.ok)
      throw refusal(node, response.status, error) ?? failure(node, response.status, error);
    const body = parseReply(data);
    const { instance, problems } =
      typeof body === 'object' && body !== null && !Array.isArray(body)
        ? await validateInput(VmRecord, body, 'body')
        : { instance: undefined, problems: ['not a JSON object'] };
    if (!instance) {
      // What was wrong goes to the log only: the client's words stay the same whatever answered.
      this.logger.warn(
        `node ${node.node_id}: /v1/spawn answered an invalid VmRecord: ${summarizeProblems(problems)}`,
      );
      throw new AgentCallError(`agent of node ${node.node_id} answered unusably`, 'failed', false);
    }
    return { vm: instance, replayed: response.status === 200 };
  }

  /** 'unknown' when the agent says it has no such VM (404): nothing left to destroy. */
  async destroy(node: AgentAddress, vmId: string): Promise<'destroyed' | 'unknown'> {
    const timeoutMs = this.settings.timeoutMs;
    const { error, response } = await this.call(
      node,
      `/v1/vms/${vmId}`,
      timeoutMs,
      (client, signal) =>
        client.DELETE('/v1/vms/{vm_id}', {
          params: { path: { vm_id: vmId } },
          signal,
          parseAs: 'text',
        }),
    );
    if (response.status === 404) return 'unknown';
    if (!response.ok) throw failure(node, response.status, error);
    return 'destroyed';
  }

  /** Every VM's life cycle on the node (GET /v1/vm-life-cycles). */
  async lifeCycles(
    node: AgentAddress,
    timeoutMs = this.settings.timeoutMs,
  ): Promise<VmLifeCycle[]> {
    const path = '/v1/vm-life-cycles';
    const { data, error, response } = await this.call(
      node,
      path,
      timeoutMs,
      (client, signal) => client.GET('/v1/vm-life-cycles', { signal, parseAs: 'text' }),
      AGENT_LARGE_REPLY_MAX_BYTES,
    );
    if (!response.ok) throw failure(node, response.status, error);
    const body = parseReply(data);
    if (!Array.isArray(body)) throw this.unusable(node, path, ['not a JSON array']);
    const lifeCycles: VmLifeCycle[] = [];
    for (const [index, item] of body.entries()) {
      lifeCycles.push(await this.validated(node, path, VmLifeCycle, item, `[${index}] `));
    }
    return lifeCycles;
  }

  /** One VM's life cycle on its node (GET /v1/vm-life-cycles/{vm_id}). */
  lifeCycle(node: AgentAddress, vmId: string): Promise<AgentAnswer<VmLifeCycle>> {
    return this.operate(node, `/v1/vm-life-cycles/${vmId}`, VmLifeCycle, (client, signal) =>
      client.GET('/v1/vm-life-cycles/{vm_id}', {
        params: { path: { vm_id: vmId } },
        signal,
        parseAs: 'text',
      }),
    );
  }

  /** POST /v1/vms/{vm_id}/stop: the stop goes on on the node; its life cycle answers at once. */
  stop(
    node: AgentAddress,
    vmId: string,
    request: StopVmRequest,
  ): Promise<AgentAnswer<VmLifeCycle>> {
    return this.operate(node, `/v1/vms/${vmId}/stop`, VmLifeCycle, (client, signal) =>
      client.POST('/v1/vms/{vm_id}/stop', {
        params: { path: { vm_id: vmId } },
        body: { force: request.force, timeout_s: request.timeout_s },
        signal,
        parseAs: 'text',
      }),
    );
  }

  /** POST /v1/vms/{vm_id}/start. */
  start(node: AgentAddress, vmId: string): Promise<AgentAnswer<VmLifeCycle>> {
    return this.operate(node, `/v1/vms/${vmId}/start`, VmLifeCycle, (client, signal) =>
      client.POST('/v1/vms/{vm_id}/start', {
        params: { path: { vm_id: vmId } },
        signal,
        parseAs: 'text',
      }),
    );
  }

  /** POST /v1/vms/{vm_id}/restart. */
  restart(
    node: AgentAddress,
    vmId: string,
    request: RestartVmRequest,
  ): Promise<AgentAnswer<VmLifeCycle>> {
    return this.operate(node, `/v1/vms/${vmId}/restart`, VmLifeCycle, (client, signal) =>
      client.POST('/v1/vms/{vm_id}/restart', {
        params: { path: { vm_id: vmId } },
        body: { force: request.force, timeout_s: request.timeout_s },
        signal,
        parseAs: 'text',
      }),
    );
  }

  /** GET /v1/vms/{vm_id}/console: a part of the VM's serial console, printable. */
  console(
    node: AgentAddress,
    vmId: string,
    query: VmConsoleQuery,
  ): Promise<AgentAnswer<VmConsole>> {
    return this.operate(node, `/v1/vms/${vmId}/console`, VmConsole, (client, signal) =>
      client.GET('/v1/vms/{vm_id}/console', {
        params: {
          path: { vm_id: vmId },
          query: { from: query.from, max_bytes: query.max_bytes },
        },
        signal,
        parseAs: 'text',
      }),
    );
  }

  /** POST /v1/vms/{vm_id}/backups: a backup to the node's VM_BACKUP_DIR, begun. */
  backUp(node: AgentAddress, vmId: string): Promise<AgentAnswer<VmBackups>> {
    return this.operate(node, `/v1/vms/${vmId}/backups`, VmBackups, (client, signal) =>
      client.POST('/v1/vms/{vm_id}/backups', {
        params: { path: { vm_id: vmId } },
        signal,
        parseAs: 'text',
      }),
    );
  }

  /** GET /v1/vms/{vm_id}/backups: the VM's backups on the node, newest first. */
  backups(node: AgentAddress, vmId: string): Promise<AgentAnswer<VmBackups>> {
    return this.operate(node, `/v1/vms/${vmId}/backups`, VmBackups, (client, signal) =>
      client.GET('/v1/vms/{vm_id}/backups', {
        params: { path: { vm_id: vmId } },
        signal,
        parseAs: 'text',
      }),
    );
  }

  /** GET /v1/restores/{vm_id}/points: where the VM can be restored from on the node. */
  restorePoints(node: AgentAddress, vmId: string): Promise<AgentAnswer<RestorePoints>> {
    return this.operate(node, `/v1/restores/${vmId}/points`, RestorePoints, (client, signal) =>
      client.GET('/v1/restores/{vm_id}/points', {
        params: { path: { vm_id: vmId } },
        signal,
        parseAs: 'text',
      }),
    );
  }

  /**
   * POST /v1/restores: the agent makes the VM from a copy, answering once its disk is whole
   * (a whole disk converted: `timeoutMs` is far longer than an action's).
   */
  restore(
    node: AgentAddress,
    request: AgentRestoreRequest,
    timeoutMs: number,
  ): Promise<AgentAnswer<AgentRestoredVm>> {
    return this.operate(
      node,
      '/v1/restores',
      AgentRestoredVm,
      (client, signal) => client.POST('/v1/restores', { body: request, signal, parseAs: 'text' }),
      timeoutMs,
    );
  }

  /** POST /v1/vms/{vm_id}/move-out: the agent moves the VM, answering once it is there. */
  moveOut(
    node: AgentAddress,
    vmId: string,
    request: AgentMoveOutRequest,
    timeoutMs: number,
  ): Promise<AgentAnswer<AgentMovedOut>> {
    return this.operate(
      node,
      `/v1/vms/${vmId}/move-out`,
      AgentMovedOut,
      (client, signal) =>
        client.POST('/v1/vms/{vm_id}/move-out', {
          params: { path: { vm_id: vmId } },
          body: request,
          signal,
          parseAs: 'text',
        }),
      timeoutMs,
    );
  }

  /** POST /v1/vms/{vm_id}/move-release: the VM's disk and files removed from its old node. */
  async releaseMoved(node: AgentAddress, vmId: string): Promise<void> {
    const { error, response } = await this.call(
      node,
      `/v1/vms/${vmId}/move-release`,
      this.settings.timeoutMs,
      (client, signal) =>
        client.POST('/v1/vms/{vm_id}/move-release', {
          params: { path: { vm_id: vmId } },
          signal,
          parseAs: 'text',
        }),
    );
    if (!response.ok) throw failure(node, response.status, error);
  }

  /**
   * PUT /v1/vms/{vm_id}/copy-plan: where and how often the VM's copies go, with the peers'
   * grants. 'unknown' when the agent has no such VM (404); anything else not 2xx is thrown.
   */
  async putCopyPlan(node: AgentAddress, vmId: string, plan: CopyPlan): Promise<'set' | 'unknown'> {
    const path = `/v1/vms/${vmId}/copy-plan`;
    const { error, response } = await this.call(
      node,
      path,
      this.settings.timeoutMs,
      (client, signal) =>
        client.PUT('/v1/vms/{vm_id}/copy-plan', {
          params: { path: { vm_id: vmId } },
          body: plan,
          signal,
          parseAs: 'text',
        }),
    );
    if (response.status === 404) return 'unknown';
    if (!response.ok) throw failure(node, response.status, error);
    return 'set';
  }

  /** One call of an operator's route: its reply validated as `wireClass`, or its refusal. */
  private async operate<T extends object>(
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
  private async validated<T extends object>(
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

  /**
   * Opens the VM's interactive serial console on its agent (a WebSocket at GET
   * /v1/vms/{vm_id}/terminal, with the node's token): the open connection, or the agent's
   * refusal (404, 409) with its message for the caller to word; anything else an AgentCallError.
   */
  async terminal(
    node: AgentAddress,
    vmId: string,
    maxMessageBytes: number,
  ): Promise<AgentAnswer<WebSocketConnection>> {
    const path = `/v1/vms/${vmId}/terminal`;
    const auth = this.nodeTokens.forAgent(node.node_id, node.credential);
    if ('unusable' in auth) {
      this.logger.warn(`node ${node.node_id}: ${path} not opened: ${auth.unusable}`);
      throw new AgentCallError(
        `agent of node ${node.node_id} was not called: this controller has no token of the kind the node heartbeats with`,
        'failed',
        true,
      );
    }
    const host = node.wg_ip.includes(':') ? `[${node.wg_ip}]` : node.wg_ip;
    const url = new URL(
      `http://${host}:${node.spawn_port}/v1/vms/${encodeURIComponent(vmId)}/terminal`,
    );
    try {
      const ws = await openWebSocket({
        url,
        timeoutMs: this.settings.timeoutMs,
        maxMessageBytes,
        headers: auth.token === undefined ? {} : { Authorization: `Bearer ${auth.token}` },
      });
      return { kind: 'answered', value: ws };
    } catch (error) {
      if (
        error instanceof WebSocketRefusedError &&
        (error.status === 404 || error.status === 409)
      ) {
        return {
          kind: 'refused',
          status: error.status,
          message:
            error.refusal === undefined ? undefined : agentErrorMessage({ message: error.refusal }),
        };
      }
      this.logger.warn(
        `node ${node.node_id}: ${path} at ${url.origin} failed: ${error instanceof Error ? error.message : String(error)}`,
      );
      throw new AgentCallError(
        `agent of node ${node.node_id} could not be reached`,
        'unreachable',
        false,
      );
    }
  }

  private unusable(node: AgentAddress, path: string, problems: string[]): AgentCallError {
    // What was wrong goes to the log only: the client's words stay the same whatever answered.
    this.logger.warn(
      `node ${node.node_id}: ${path} answered unusably: ${summarizeProblems(problems)}`,
    );
    return new AgentCallError(`agent of node ${node.node_id} answered unusably`, 'failed', false);
  }

  private async call<T extends { response: Response }>(
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

/** A refusal the controller passes on (422, 507; a 500 as 502), when the agent said why in JSON. */
function refusal(
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
function failure(node: AgentAddress, status: number, body: unknown): AgentCallError {
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
