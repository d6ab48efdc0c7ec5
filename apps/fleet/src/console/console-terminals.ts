import {
  BeforeApplicationShutdown,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  BearerTokens,
  CLOSE_GOING_AWAY,
  CLOSE_POLICY,
  Caller,
  Clock,
  OPERATOR,
  WebSocketConnection,
  acceptUpgrade,
  offeredProtocols,
  presentedBearerToken,
  refuseUpgrade,
  relayWebSockets,
  routeUpgrades,
  upgradeProblem,
} from '@app/daemon';
import { AuditEntry, AuditLog } from '../audit/audit-log';
import { ID_PATTERN } from '@app/fleet-domain';
import { FleetConfig } from '../config/fleet.config';
import { VmHostClient } from '../vms/vm-host.client';
import { AgentCallError } from '../vms/agent-calls';
import { VmNotFoundError } from '../vms/vms.errors';
import { VmsService } from '../vms/vms.service';
import {
  CROSS_SITE_MESSAGE,
  WRONG_HOST_MESSAGE,
  isListenerHost,
} from '../operations/ops-listener.http';
import { ConsoleSessions, SESSION_COOKIE, cookieValue } from './console-session';

/**
 * The interactive console's two doors on the operations listener: the page's
 * (/console/vms/{vm_id}/terminal: a session and its CSRF token) and the CLI's
 * (/v1/vms/{vm_id}/terminal: the API token or a tenant's, as every /v1 VM route).
 */
const TERMINAL_PATH = /^\/(console|v1)\/vms\/([^/?]+)\/terminal(?:\?.*)?$/;

/** The subprotocol the page and the CLI speak; the page adds `csrf.<token>` beside it. */
export const TERMINAL_PROTOCOL = 'ppn-terminal';
const CSRF_PROTOCOL_PREFIX = 'csrf.';

/** A keystroke or a paste from the page; guest output in larger pieces from the agent. */
const MAX_INPUT_MESSAGE_BYTES = 16 * 1024;
const MAX_OUTPUT_MESSAGE_BYTES = 64 * 1024;
const KEEP_ALIVE_MS = 20_000;

/**
 * The agent's fixed refusals of a terminal (apps/vm-host/src/vms/vms.errors.ts,
 * VmTerminalRefusedError), each in the controller's own words; anything else an agent says is
 * not passed on.
 */
export function terminalRefusal(vmId: string, nodeId: string, message: string | undefined): string {
  switch (message) {
    case `vm ${vmId} is not running`:
      return `vm ${vmId} is not running: start it first, its serial console answers only while it runs`;
    case `vm ${vmId}: its serial console is in use by another session`:
      return `vm ${vmId}: its serial console is in use by another session (one at a time); close that one first`;
    case `vm ${vmId} has no serial socket`:
      return `vm ${vmId} was started by an agent older than the interactive console: restart it (stop, start) to get one; its serial log still reads as before`;
    default:
      return `node ${nodeId} refused the serial console of vm ${vmId}`;
  }
}

/**
 * The operations listener's interactive serial consoles: a WebSocket from the page or the CLI,
 * relayed to the VM's agent with the node's own credential (VmHostClient.terminal) and from
 * there to QEMU's serial port. Before the upgrade, the listener's own checks: its Host names
 * (421), no other site's Origin or Sec-Fetch-Site (403; a browser sends Origin with every
 * WebSocket, and no CORS stands between a page and a WebSocket, so this check is the one), then
 * the credential of the door taken (401). Closing either side closes the other, so a page
 * closed frees the VM's port on its node.
 */
@Injectable()
export class ConsoleTerminals implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Console');
  /** The pages' and CLIs' open consoles, closed (and so their agents' sides) when the controller stops. */
  private readonly open = new Map<WebSocketConnection, { session?: string }>();

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly sessions: ConsoleSessions,
    private readonly tokens: BearerTokens,
    private readonly clock: Clock,
    private readonly config: FleetConfig,
    private readonly vms: VmsService,
    private readonly vmHost: VmHostClient,
    private readonly audit: AuditLog,
  ) {}

  onApplicationBootstrap(): void {
    routeUpgrades(
      this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined,
      (req, socket, head) => this.upgrade(req, socket, head),
      (message) => this.logger.warn(message),
    );
    // A session logged out closes its open terminals at once, not at their next keep-alive.
    this.sessions.onEnd((cookie) => {
      for (const [client, opened] of this.open) {
        if (opened.session === cookie) client.close(CLOSE_POLICY, 'the console session ended');
      }
    });
  }

  beforeApplicationShutdown(): void {
    for (const client of this.open.keys()) {
      client.close(CLOSE_GOING_AWAY, 'the controller is stopping');
    }
  }

  /**
   * Who opens the console (the caller, and the page's session), or why the handshake is refused,
   * as a status and a message.
   */
  checkHandshake(req: IncomingMessage, door: 'console' | 'v1'): Handshake {
    const host = req.headers.host;
    if (!isListenerHost(host, req.socket.localAddress, this.config.opsHosts ?? [])) {
      return { status: 421, message: WRONG_HOST_MESSAGE(String(host ?? '').slice(0, 100)) };
    }
    const origin = req.headers.origin;
    const site = req.headers['sec-fetch-site'];
    const sameOrigin =
      origin === undefined || origin === `http://${host}` || origin === `https://${host}`;
    if (!sameOrigin || (site !== undefined && site !== 'same-origin' && site !== 'none')) {
      return { status: 403, message: CROSS_SITE_MESSAGE };
    }
    if (door === 'v1') {
      // The API token, or a tenant's (its own VMs alone, as on every /v1 route).
      if (!this.tokens.isSet('api')) return { caller: OPERATOR };
      const presented = presentedBearerToken(req.headers.authorization);
      if (presented !== undefined && this.tokens.matches('api', presented)) {
        return { caller: OPERATOR };
      }
      const tenantId =
        presented === undefined ? undefined : this.tokens.tenants?.tenantOf(presented);
      if (tenantId !== undefined) return { caller: { kind: 'tenant', tenantId } };
      return {
        status: 401,
        message:
          "this route needs the API token (VM_FLEET_API_TOKEN) or a tenant's token as a bearer token",
        headers: { 'WWW-Authenticate': `Bearer realm="${this.tokens.realm}"` },
      };
    }
    // The page's door: a browser page, its Origin given, its session and the session's CSRF token.
    if (origin === undefined) return { status: 403, message: CROSS_SITE_MESSAGE };
    const session = cookieValue(req.headers.cookie, SESSION_COOKIE);
    if (!this.sessions.isValid(session, this.clock.wallNow() / 1000)) {
      return { status: 401, message: 'no console session, or it has expired: log in again' };
    }
    const tenantId = this.sessions.tenantOf(session);
    const caller: Caller = tenantId === undefined ? OPERATOR : { kind: 'tenant', tenantId };
    const csrf = offeredProtocols(req)
      .find((protocol) => protocol.startsWith(CSRF_PROTOCOL_PREFIX))
      ?.slice(CSRF_PROTOCOL_PREFIX.length);
    if (!this.sessions.isCsrfTokenOf(session, csrf)) {
      return {
        status: 403,
        message: "refused: the request does not carry this session's CSRF token; reload the page",
        caller,
      };
    }
    return { caller, session };
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const match = TERMINAL_PATH.exec(req.url ?? '');
    if (match === null) return refuseUpgrade(socket, 404, 'no such WebSocket route');
    const door = match[1] as 'console' | 'v1';
    let vmId: string | undefined;
    let caller: Caller | undefined = undefined;
    // Every console opened or refused leaves an audit line: who, which door, which VM, the status.
    const refuse = (status: number, message: string, headers?: Record<string, string>): void => {
      this.auditOf(req, door, caller, vmId, status);
      refuseUpgrade(socket, status, message, headers);
    };
    try {
      vmId = decodeURIComponent(match[2]);
    } catch {
      return refuse(400, 'vm_id is not a VM id');
    }
    if (!ID_PATTERN.test(vmId)) vmId = undefined;
    const handshake = this.checkHandshake(req, door);
    caller = handshake.caller;
    if ('status' in handshake) {
      return refuse(handshake.status, handshake.message, handshake.headers);
    }
    const problem = upgradeProblem(req);
    if (problem !== undefined) return refuse(400, problem);
    if (vmId === undefined) return refuse(400, 'vm_id is not a VM id');
    let listed;
    try {
      listed = await this.vms.findWithNode(vmId);
    } catch (error) {
      if (error instanceof VmNotFoundError) return refuse(404, error.message);
      throw error;
    }
    // A tenant opens its own VMs' consoles alone, at either door; another's is the same 404 as none.
    if (handshake.caller.kind === 'tenant' && listed.vm.tenant_id !== handshake.caller.tenantId) {
      return refuse(404, new VmNotFoundError(vmId).message);
    }
    const nodeId = listed.node.node_id;
    if (listed.silent) {
      return refuse(
        409,
        `vm ${vmId}: its node ${nodeId} is silent; no agent answers for its serial console`,
      );
    }
    let answer;
    try {
      answer = await this.vmHost.terminal(listed.node, vmId, MAX_OUTPUT_MESSAGE_BYTES);
    } catch (error) {
      if (!(error instanceof AgentCallError)) throw error;
      return refuse(502, `agent of node ${nodeId} could not be reached`);
    }
    if (answer.kind === 'refused') {
      const status = answer.status === 404 ? 404 : 409;
      return refuse(status, terminalRefusal(vmId, nodeId, answer.message));
    }
    const agent = answer.value;
    if (socket.destroyed) {
      agent.close();
      return;
    }
    const offered = offeredProtocols(req);
    const client = acceptUpgrade(req, socket, head, {
      maxMessageBytes: MAX_INPUT_MESSAGE_BYTES,
      ...(offered.includes(TERMINAL_PROTOCOL) ? { protocol: TERMINAL_PROTOCOL } : {}),
    });
    this.auditOf(req, door, caller, vmId, 101);
    const session = handshake.session;
    // The page's console lasts as long as its session: checked at each keep-alive.
    client.keepAlive(KEEP_ALIVE_MS, () =>
      session === undefined || this.sessions.isValid(session, this.clock.wallNow() / 1000)
        ? undefined
        : 'the console session ended',
    );
    // The agent's side is pinged too: an agent gone without a word frees the page's side.
    agent.keepAlive(KEEP_ALIVE_MS);
    this.open.set(client, session === undefined ? {} : { session });
    this.logger.log(`vm ${vmId} on node ${nodeId}: interactive console opened (${door})`);
    relayWebSockets(client, agent, (why) => {
      this.open.delete(client);
      // `why` may be the agent's close reason: shown in the log only, printable and short.
      const shown = why.replace(/[^\x20-\x7e]/g, '?').slice(0, 120);
      this.logger.log(`vm ${vmId} on node ${nodeId}: interactive console closed (${shown})`);
    });
  }

  private auditOf(
    req: IncomingMessage,
    door: 'console' | 'v1',
    caller: Caller | undefined,
    vmId: string | undefined,
    status: number,
  ): void {
    const entry: AuditEntry = {
      time: new Date(this.clock.wallNow()).toISOString(),
      who: caller?.kind ?? 'none',
      listener: 'ops',
      method: 'GET',
      path: `/${door}/vms/${vmId ?? '?'}/terminal`,
      status,
    };
    if (caller?.kind === 'tenant') entry.tenant_id = caller.tenantId;
    if (vmId !== undefined) entry.vm_id = vmId;
    if (req.socket.remoteAddress) entry.from = req.socket.remoteAddress;
    this.audit.write(entry);
  }
}

/** Who opens a console (the page's session beside), or why it is refused (who, when known). */
type Handshake =
  | { caller: Caller; session?: string }
  | { status: number; message: string; headers?: Record<string, string>; caller?: Caller };
