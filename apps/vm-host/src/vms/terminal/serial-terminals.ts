import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { IncomingMessage, Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  BearerTokens,
  CLOSE_GOING_AWAY,
  WebSocketConnection,
  acceptUpgrade,
  bridgeWebSocket,
  presentedBearerToken,
  refuseUpgrade,
  routeUpgrades,
  upgradeProblem,
} from '@app/daemon';
import { ID_PATTERN } from '@app/fleet-domain';
import { VmActionsService } from '../actions/vm-actions.service';
import { VmNotOnNodeError, VmTerminalRefusedError } from '../vms.errors';

/** The interactive console's route: GET with a WebSocket upgrade, the node token as bearer. */
export const TERMINAL_PATH = /^\/v1\/vms\/([^/?]+)\/terminal(?:\?.*)?$/;

/** A keystroke or a paste: more than this in one message closes the connection (1009). */
const MAX_INPUT_MESSAGE_BYTES = 16 * 1024;
/** How often an idle console is pinged; a peer silent for two of these is let go. */
const KEEP_ALIVE_MS = 20_000;
/** How long QEMU's socket may take to accept. */
const CONNECT_TIMEOUT_MS = 5_000;

/**
 * The agent's interactive serial consoles: a WebSocket at GET /v1/vms/{vm_id}/terminal (the
 * controller's, with this node's token) joined to the socket QEMU's serial port is on. One
 * session per VM: a second is refused (409) while the first lasts, as `virsh console` refuses;
 * the first ends when either side closes, its TCP connection fails, or it misses the pings, so
 * a page closed or a laptop gone frees the port within a minute at most.
 */
@Injectable()
export class SerialTerminals implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Vms');
  private readonly sessions = new Map<string, WebSocketConnection>();

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly tokens: BearerTokens,
    private readonly actions: VmActionsService,
  ) {}

  onApplicationBootstrap(): void {
    routeUpgrades(
      this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined,
      (req, socket, head) => this.upgrade(req, socket, head),
      (message) => this.logger.warn(message),
    );
  }

  onApplicationShutdown(): void {
    for (const session of this.sessions.values()) session.close(CLOSE_GOING_AWAY, 'agent stopping');
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const vmId = TERMINAL_PATH.exec(req.url ?? '')?.[1];
    if (vmId === undefined || !ID_PATTERN.test(vmId)) {
      return refuseUpgrade(socket, 404, 'no such WebSocket route');
    }
    // Only the controller opens an agent's console; a browser always sends Origin with a
    // WebSocket, so one carrying it is a page of some site trying the agent directly.
    if (req.headers.origin !== undefined) {
      return refuseUpgrade(
        socket,
        403,
        "no browser opens an agent's serial console: use the controller's",
      );
    }
    if (this.tokens.isSet('node')) {
      const presented = presentedBearerToken(req.headers.authorization);
      if (presented === undefined || !this.tokens.matches('node', presented)) {
        return refuseUpgrade(socket, 401, 'this route needs the node token', {
          'WWW-Authenticate': `Bearer realm="${this.tokens.realm}"`,
        });
      }
    }
    const problem = upgradeProblem(req);
    if (problem !== undefined) return refuseUpgrade(socket, 400, problem);
    if (this.sessions.has(vmId)) {
      return refuseUpgrade(socket, 409, VmTerminalRefusedError.inUse(vmId).message);
    }
    let path: string;
    try {
      path = await this.actions.consoleSocket(vmId);
    } catch (error) {
      if (error instanceof VmNotOnNodeError) return refuseUpgrade(socket, 404, error.message);
      if (error instanceof VmTerminalRefusedError) return refuseUpgrade(socket, 409, error.message);
      throw error;
    }
    // Checked again after the wait: two handshakes at once get one port.
    if (this.sessions.has(vmId)) {
      return refuseUpgrade(socket, 409, VmTerminalRefusedError.inUse(vmId).message);
    }
    const serial = await connected(path).catch(() => undefined);
    if (serial === undefined) {
      // No socket: the VM was started by an agent before this one (a file chardev only).
      return refuseUpgrade(socket, 409, VmTerminalRefusedError.noSocket(vmId).message);
    }
    if (this.sessions.has(vmId) || socket.destroyed) {
      serial.destroy();
      return refuseUpgrade(socket, 409, VmTerminalRefusedError.inUse(vmId).message);
    }
    const ws = acceptUpgrade(req, socket, head, { maxMessageBytes: MAX_INPUT_MESSAGE_BYTES });
    this.sessions.set(vmId, ws);
    ws.keepAlive(KEEP_ALIVE_MS);
    this.logger.log(`vm ${vmId}: interactive console opened`);
    bridgeWebSocket(ws, serial, (why) => {
      if (this.sessions.get(vmId) === ws) this.sessions.delete(vmId);
      this.logger.log(`vm ${vmId}: interactive console closed (${why})`);
    });
  }
}

/** A connection to a Unix socket, once made. */
function connected(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('timed out'));
    }, CONNECT_TIMEOUT_MS);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}
