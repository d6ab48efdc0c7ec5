import { chmod, rm } from 'node:fs/promises';
import { Server, Socket, connect, createServer } from 'node:net';
import { PRIVATE_FILE_MODE } from '../vms/files/vm-files';

/**
 * A unix socket in the VM's run folder that the agent relays to the new node's address: QEMU
 * runs in the guests' cgroup, whose connections the node's firewall refuses (the guest network
 * isolation: its loopback, the fleet's ports), and it never needs any of its own. So QEMU
 * connects here (the mirror's NBD client, the migration), and the agent, outside that cgroup,
 * makes the connection to the new node. Counts the bytes sent through it.
 */
export class MoveRelay {
  private readonly sockets = new Set<Socket>();
  sentBytes = 0;

  private constructor(
    private readonly server: Server,
    readonly path: string,
  ) {}

  static async open(path: string, to: { host: string; port: number }): Promise<MoveRelay> {
    await rm(path, { force: true });
    const sockets: { relay?: MoveRelay } = {};
    const server = createServer((local) => sockets.relay?.pipe(local, to));
    const relay = new MoveRelay(server, path);
    sockets.relay = relay;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => resolve());
    });
    await chmod(path, PRIVATE_FILE_MODE);
    return relay;
  }

  private pipe(local: Socket, to: { host: string; port: number }): void {
    const remote = connect({ host: to.host, port: to.port });
    for (const socket of [local, remote]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => {
        local.destroy();
        remote.destroy();
      });
    }
    local.on('data', (chunk: Buffer) => (this.sentBytes += chunk.length));
    local.pipe(remote);
    remote.pipe(local);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await rm(this.path, { force: true });
  }
}
