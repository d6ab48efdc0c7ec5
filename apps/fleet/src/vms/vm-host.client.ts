import { Injectable } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import {
  AGENT_REQUEST_TIMEOUT_MS,
  CreateVmRequest,
  NodeState,
  VmRecord,
  describeValidationErrors,
} from '@app/fleet-domain';

/** How long the controller waits for an agent; a provider so tests can shorten it. */
export class VmHostClientSettings {
  timeoutMs = AGENT_REQUEST_TIMEOUT_MS;
}

/** The agent could not be reached, timed out, failed, or answered something unusable. */
export class AgentCallError extends Error {}

type AgentAddress = Pick<NodeState, 'node_id' | 'wg_ip' | 'spawn_port'>;

/** Calls a node agent's local API at http://{wg_ip}:{spawn_port}. */
@Injectable()
export class VmHostClient {
  constructor(private readonly settings: VmHostClientSettings) {}

  async spawn(node: AgentAddress, request: CreateVmRequest): Promise<VmRecord> {
    const response = await this.call(node, 'POST', '/v1/spawn', request);
    if (!response.ok) throw await this.failure(node, response);
    const body: unknown = await response.json().catch(() => undefined);
    const vm = plainToInstance(VmRecord, body);
    const problems = typeof body === 'object' && body !== null ? validateSync(vm) : [];
    if (typeof body !== 'object' || body === null || problems.length > 0) {
      throw new AgentCallError(
        `agent of node ${node.node_id} answered the spawn with an invalid VmRecord: ${describeValidationErrors(problems).join('; ') || 'not a JSON object'}`,
      );
    }
    return vm;
  }

  /** 'unknown' when the agent says it has no such VM (404): nothing left to destroy. */
  async destroy(node: AgentAddress, vmId: string): Promise<'destroyed' | 'unknown'> {
    const response = await this.call(node, 'DELETE', `/v1/vms/${encodeURIComponent(vmId)}`);
    if (response.status === 404) return 'unknown';
    if (!response.ok) throw await this.failure(node, response);
    return 'destroyed';
  }

  private async call(
    node: AgentAddress,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<Response> {
    const host = node.wg_ip.includes(':') ? `[${node.wg_ip}]` : node.wg_ip;
    const url = `http://${host}:${node.spawn_port}${path}`;
    try {
      return await fetch(url, {
        method,
        headers: body === undefined ? undefined : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.settings.timeoutMs),
      });
    } catch (error) {
      const reason =
        error instanceof DOMException && error.name === 'TimeoutError'
          ? `no answer within ${this.settings.timeoutMs} ms`
          : describeFetchError(error);
      throw new AgentCallError(`agent of node ${node.node_id} at ${url} unreachable: ${reason}`);
    }
  }

  private async failure(node: AgentAddress, response: Response): Promise<AgentCallError> {
    const text = await response.text().catch(() => '');
    return new AgentCallError(
      `agent of node ${node.node_id} answered ${response.status}${text ? `: ${text.slice(0, 300)}` : ''}`,
    );
  }
}

function describeFetchError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error ? cause.message : error.message;
}
