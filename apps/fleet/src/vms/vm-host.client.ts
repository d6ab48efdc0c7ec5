import { Injectable, Logger } from '@nestjs/common';
import {
  WebSocketConnection,
  WebSocketRefusedError,
  openWebSocket,
  summarizeProblems,
  validateInput,
} from '@app/daemon';
import {
  AgentMoveOutRequest,
  AgentMovedOut,
  AgentRestoreRequest,
  AgentRestoredVm,
  CopyPlan,
  IDEMPOTENCY_KEY_HEADER,
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
import { AGENT_LARGE_REPLY_MAX_BYTES } from './agent-http.transport';
import {
  AgentAddress,
  AgentAnswer,
  AgentCalls,
  AgentCallError,
  VmHostClientSettings,
  failure,
  parseReply,
  refusal,
} from './agent-calls';

/** What the agent answered a spawn with; `replayed`: it already had this VM for the key (200). */
export interface Spawned {
  vm: VmRecord;
  replayed: boolean;
}

/** Calls a node agent's local API at http://{wg_ip}:{spawn_port}, typed from its OpenAPI document. */
@Injectable()
export class VmHostClient {
  private readonly logger = new Logger('Vms');
  private readonly calls: AgentCalls;

  constructor(
    private readonly settings: VmHostClientSettings,
    private readonly nodeTokens: NodeTokens,
  ) {
    this.calls = new AgentCalls(settings, nodeTokens, this.logger);
  }

  /** `spawnKey`: the Idempotency-Key the agent keeps with the VM (see SPAWN_KEY_PATTERN). */
  async spawn(
    node: AgentAddress,
    request: SpawnVmRequest,
    spawnKey: string,
    timeoutMs = this.settings.timeoutMs,
  ): Promise<Spawned> {
    const { data, error, response } = await this.calls.call(
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
    const { error, response } = await this.calls.call(
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
    const { data, error, response } = await this.calls.call(
      node,
      path,
      timeoutMs,
      (client, signal) => client.GET('/v1/vm-life-cycles', { signal, parseAs: 'text' }),
      AGENT_LARGE_REPLY_MAX_BYTES,
    );
    if (!response.ok) throw failure(node, response.status, error);
    const body = parseReply(data);
    if (!Array.isArray(body)) throw this.calls.unusable(node, path, ['not a JSON array']);
    const lifeCycles: VmLifeCycle[] = [];
    for (const [index, item] of body.entries()) {
      lifeCycles.push(await this.calls.validated(node, path, VmLifeCycle, item, `[${index}] `));
    }
    return lifeCycles;
  }

  /** One VM's life cycle on its node (GET /v1/vm-life-cycles/{vm_id}). */
  lifeCycle(node: AgentAddress, vmId: string): Promise<AgentAnswer<VmLifeCycle>> {
    return this.calls.operate(node, `/v1/vm-life-cycles/${vmId}`, VmLifeCycle, (client, signal) =>
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
    return this.calls.operate(node, `/v1/vms/${vmId}/stop`, VmLifeCycle, (client, signal) =>
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
    return this.calls.operate(node, `/v1/vms/${vmId}/start`, VmLifeCycle, (client, signal) =>
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
    return this.calls.operate(node, `/v1/vms/${vmId}/restart`, VmLifeCycle, (client, signal) =>
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
    return this.calls.operate(node, `/v1/vms/${vmId}/console`, VmConsole, (client, signal) =>
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
    return this.calls.operate(node, `/v1/vms/${vmId}/backups`, VmBackups, (client, signal) =>
      client.POST('/v1/vms/{vm_id}/backups', {
        params: { path: { vm_id: vmId } },
        signal,
        parseAs: 'text',
      }),
    );
  }

  /** GET /v1/vms/{vm_id}/backups: the VM's backups on the node, newest first. */
  backups(node: AgentAddress, vmId: string): Promise<AgentAnswer<VmBackups>> {
    return this.calls.operate(node, `/v1/vms/${vmId}/backups`, VmBackups, (client, signal) =>
      client.GET('/v1/vms/{vm_id}/backups', {
        params: { path: { vm_id: vmId } },
        signal,
        parseAs: 'text',
      }),
    );
  }

  /** GET /v1/restores/{vm_id}/points: where the VM can be restored from on the node. */
  restorePoints(node: AgentAddress, vmId: string): Promise<AgentAnswer<RestorePoints>> {
    return this.calls.operate(
      node,
      `/v1/restores/${vmId}/points`,
      RestorePoints,
      (client, signal) =>
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
    return this.calls.operate(
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
    return this.calls.operate(
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

  /** POST /v1/vms/{vm_id}/move-resume: a guest its old node left paused runs again there. */
  async resumeMoved(node: AgentAddress, vmId: string): Promise<void> {
    const { error, response } = await this.calls.call(
      node,
      `/v1/vms/${vmId}/move-resume`,
      this.settings.timeoutMs,
      (client, signal) =>
        client.POST('/v1/vms/{vm_id}/move-resume', {
          params: { path: { vm_id: vmId } },
          signal,
          parseAs: 'text',
        }),
    );
    if (!response.ok) throw failure(node, response.status, error);
  }

  /** POST /v1/vms/{vm_id}/move-release: the VM's disk and files removed from its old node. */
  async releaseMoved(node: AgentAddress, vmId: string): Promise<void> {
    const { error, response } = await this.calls.call(
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
    const { error, response } = await this.calls.call(
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
}
