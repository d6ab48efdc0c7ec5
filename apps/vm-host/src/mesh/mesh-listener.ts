import { type Server, type Socket, connect, createServer } from 'node:net';
import type { MeshTarget } from './mesh-plan';

/** How long the mesh waits for the VM's node to take a connection before it gives the client up. */
export const MESH_CONNECT_TIMEOUT_MS = 5_000;
/** A connection with no byte either way this long is closed (a client gone without a FIN). */
export const MESH_IDLE_TIMEOUT_MS = 15 * 60_000;
/**
 * Connections one port forwards at once; Node accepts a connection past it and closes it at
 * once (server.maxConnections), so the client sees its connection end with no byte.
 */
export const MESH_MAX_CONNECTIONS_PER_PORT = 256;

/** Connections the whole mesh of a node forwards at once, every port together. */
export const MESH_MAX_CONNECTIONS = 4096;

/**
 * Connections one client address holds at once, every port together: so one client cannot
 * hold the whole MESH_MAX_CONNECTIONS and lock everyone else out. Past it, accepted and closed.
 */
export const MESH_MAX_CONNECTIONS_PER_SOURCE = 64;

export interface MeshListenerLimits {
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  maxConnections: number;
}

export const MESH_LIMITS: MeshListenerLimits = {
  connectTimeoutMs: MESH_CONNECT_TIMEOUT_MS,
  idleTimeoutMs: MESH_IDLE_TIMEOUT_MS,
  maxConnections: MESH_MAX_CONNECTIONS_PER_PORT,
};

/** The connections every listener of a node's mesh shares (each joined one counts 1). */
export class MeshBudget {
  open = 0;
  /** Connections joined now, by the client's address. */
  private readonly bySource = new Map<string, number>();

  constructor(
    readonly max: number = MESH_MAX_CONNECTIONS,
    readonly maxPerSource: number = MESH_MAX_CONNECTIONS_PER_SOURCE,
  ) {}

  /** Counts a connection from `source` in, or false when the mesh or that client is at its cap. */
  take(source: string): boolean {
    const held = this.bySource.get(source) ?? 0;
    if (this.open >= this.max || held >= this.maxPerSource) return false;
    this.open += 1;
    this.bySource.set(source, held + 1);
    return true;
  }

  give(source: string): void {
    this.open -= 1;
    const held = (this.bySource.get(source) ?? 1) - 1;
    if (held > 0) this.bySource.set(source, held);
    else this.bySource.delete(source);
  }
}

/**
 * One published port of another node's VM on this node's mesh address: each TCP connection is
 * joined to a new one to its `target` (always that node's address at the same port), bytes
 * copied both ways as they come, half-closes passed on; nothing of what passes is read or
 * logged. The target may change (the VM moved to a third node) without closing the port;
 * connections already joined keep theirs.
 */
export class MeshListener {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  constructor(
    readonly port: number,
    public target: MeshTarget,
    private readonly limits: MeshListenerLimits = MESH_LIMITS,
    private readonly budget: MeshBudget = new MeshBudget(),
  ) {
    this.server = createServer({ allowHalfOpen: true }, (client) => this.join(client));
    this.server.maxConnections = limits.maxConnections;
    // After listen: a failure to bind is the listen promise's; a later one (none expected) is ignored.
    this.server.on('error', () => undefined);
  }

  /** Connections joined now (client sockets). */
  get connections(): number {
    return this.sockets.size / 2;
  }

  /** Listens on `host:port`; rejects with the bind's error (EADDRINUSE: something holds it). */
  listen(host: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const failed = (error: Error) => reject(error);
      this.server.once('error', failed);
      this.server.listen({ host, port: this.port, exclusive: true }, () => {
        this.server.off('error', failed);
        resolve();
      });
    });
  }

  /**
   * Lets the port go (libuv closes the socket at once, so a VM of this node can bind it next)
   * and ends the connections joined: their VM is elsewhere now, or gone.
   */
  close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    return new Promise((resolve) => {
      if (!this.server.listening) return resolve();
      this.server.close(() => resolve());
    });
  }

  private join(client: Socket): void {
    const source = client.remoteAddress ?? '';
    if (!this.budget.take(source)) {
      client.destroy();
      return;
    }
    const { address, port } = this.target;
    const upstream = connect({ host: address, port, allowHalfOpen: true });
    this.sockets.add(client);
    this.sockets.add(upstream);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      this.budget.give(source);
      clearTimeout(connecting);
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    const connecting = setTimeout(end, this.limits.connectTimeoutMs);
    upstream.once('connect', () => clearTimeout(connecting));
    for (const socket of [client, upstream]) {
      socket.setNoDelay(true);
      socket.setTimeout(this.limits.idleTimeoutMs, end);
      socket.on('error', end);
      socket.on('close', end);
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
