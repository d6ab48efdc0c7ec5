import { Injectable } from '@nestjs/common';
import createClient, { Client } from 'openapi-fetch';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { describeRequestFailure, describeValidationErrors } from '@app/daemon';
import {
  AGENT_REQUEST_TIMEOUT_MS,
  CreateVmRequest,
  IDEMPOTENCY_KEY_HEADER,
  NodeState,
  VmRecord,
  agentErrorMessage,
} from '@app/fleet-domain';
import type { paths } from './vm-host-api.generated';
import { NodeRefusedVmError } from './vms.errors';

/** How long the controller waits for an agent; a provider so tests can shorten it. */
export class VmHostClientSettings {
  timeoutMs = AGENT_REQUEST_TIMEOUT_MS;
}

/** The agent could not be reached, timed out, failed, or answered something unusable. */
export class AgentCallError extends Error {}

type AgentAddress = Pick<NodeState, 'node_id' | 'wg_ip' | 'spawn_port'>;

/** What the agent answered a spawn with; `replayed`: it already had this VM for the key (200). */
export interface Spawned {
  vm: VmRecord;
  replayed: boolean;
}

/** Calls a node agent's local API at http://{wg_ip}:{spawn_port}, typed from its OpenAPI document. */
@Injectable()
export class VmHostClient {
  constructor(private readonly settings: VmHostClientSettings) {}

  /** `spawnKey`: the Idempotency-Key the agent keeps with the VM (see SPAWN_KEY_PATTERN). */
  async spawn(node: AgentAddress, request: CreateVmRequest, spawnKey: string): Promise<Spawned> {
    const { data, error, response } = await this.call(node, '/v1/spawn', (client, signal) =>
      client.POST('/v1/spawn', {
        body: request,
        headers: { [IDEMPOTENCY_KEY_HEADER]: spawnKey },
        signal,
        parseAs: 'text',
      }),
    );
    if (!response.ok)
      throw refusal(node, response.status, error) ?? failure(node, response.status, error);
    let body: unknown;
    try {
      body = JSON.parse(data ?? '');
    } catch {
      body = undefined;
    }
    const vm = plainToInstance(VmRecord, body);
    const problems = typeof body === 'object' && body !== null ? validateSync(vm) : [];
    if (typeof body !== 'object' || body === null || problems.length > 0) {
      throw new AgentCallError(
        `agent of node ${node.node_id} answered the spawn with an invalid VmRecord: ${describeValidationErrors(problems).join('; ') || 'not a JSON object'}`,
      );
    }
    return { vm, replayed: response.status === 200 };
  }

  /** 'unknown' when the agent says it has no such VM (404): nothing left to destroy. */
  async destroy(node: AgentAddress, vmId: string): Promise<'destroyed' | 'unknown'> {
    const { error, response } = await this.call(node, `/v1/vms/${vmId}`, (client, signal) =>
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

  private async call<T extends { response: Response }>(
    node: AgentAddress,
    path: string,
    send: (client: Client<paths>, signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const host = node.wg_ip.includes(':') ? `[${node.wg_ip}]` : node.wg_ip;
    const baseUrl = `http://${host}:${node.spawn_port}`;
    try {
      return await send(
        createClient<paths>({ baseUrl }),
        AbortSignal.timeout(this.settings.timeoutMs),
      );
    } catch (error) {
      const reason = describeRequestFailure(error, this.settings.timeoutMs);
      throw new AgentCallError(
        `agent of node ${node.node_id} at ${baseUrl}${path} unreachable: ${reason}`,
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

/** The agent's own error message, when it gave one, goes into the 502 the operator sees. */
function failure(node: AgentAddress, status: number, body: unknown): AgentCallError {
  const message =
    typeof body === 'object' && body !== null ? (body as { message?: unknown }).message : body;
  const text = typeof message === 'string' ? message : body ? JSON.stringify(body) : '';
  const detail = text ? `: ${text.slice(0, 300)}` : '';
  return new AgentCallError(`agent of node ${node.node_id} answered ${status}${detail}`);
}
