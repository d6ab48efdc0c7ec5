import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SpawnVmRequest, VmRecord } from '@app/fleet-domain';
import { vmRecord } from './heartbeats';

export interface StubAgentCall {
  method: string;
  url: string;
  body: unknown;
}

type Responder = (call: StubAgentCall, res: ServerResponse) => void | Promise<void>;

/**
 * A small real HTTP server standing in for a node agent's local API. Each test decides
 * how it answers; every call it received is kept in `calls`.
 */
export class StubAgent {
  readonly calls: StubAgentCall[] = [];
  private server?: Server;
  private readonly open = new Set<ServerResponse>();

  constructor(private respond: Responder) {}

  get port(): number {
    return (this.server!.address() as AddressInfo).port;
  }

  answerWith(respond: Responder): void {
    this.respond = respond;
  }

  /** `host`: the address it listens on (a test host's end, for controllers in namespaces). */
  async start(host = '127.0.0.1'): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, host, resolve));
    return this;
  }

  async stop(): Promise<void> {
    for (const res of this.open) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) =>
      this.server ? this.server.close(() => resolve()) : resolve(),
    );
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.open.add(res);
    res.on('close', () => this.open.delete(res));
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const call = {
      method: req.method ?? '',
      url: req.url ?? '',
      body: text ? JSON.parse(text) : undefined,
    };
    this.calls.push(call);
    await this.respond(call, res);
  }
}

export function json(res: ServerResponse, status: number, body?: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(body === undefined ? undefined : JSON.stringify(body));
}

/**
 * A spawn answered as a healthy agent answers it: the VM it was asked for, Provisioning, under
 * the vm_id the controller minted (`vmId`: another one, as a hostile agent or an agent of the
 * original services answers).
 */
export function spawnedVm(
  call: StubAgentCall,
  vmId = (call.body as SpawnVmRequest).vm_id ??
    `vm-${Math.random().toString(16).slice(2, 18).padEnd(16, '0')}`,
): VmRecord {
  const body = call.body as SpawnVmRequest;
  return vmRecord(vmId, {
    vm_type: body.vm_type,
    state: 'Provisioning' as never,
    ram_alloc_mb: body.ram_mb,
    vcpu_count: body.vcpu_count,
    started_at: null,
    tenant_id: body.tenant_id ?? null,
  });
}

/** The Idempotency-Key the controller sent the agent with the call this answers. */
export function spawnKeyOf(res: ServerResponse): string | undefined {
  const value = res.req.headers['idempotency-key'];
  return typeof value === 'string' ? value : undefined;
}
