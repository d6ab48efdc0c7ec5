import { Injectable, OnModuleDestroy } from '@nestjs/common';
import type { Socket } from 'node:net';

/**
 * The connections a peer's copy (its chunks) or a restore's pull (a chain's files) came in on.
 * As the agent stops they are ended, before the HTTP server waits for its requests: a peer
 * sending its chunks one after the other on a kept-alive connection would otherwise hold the
 * stop until its whole copy is in (seen: beyond systemd's and the tests' grace). The transfer
 * cut short is never used (a file is taken only once complete and checked); the peer sends
 * it again at its next interval, the puller reports its restore failed.
 */
@Injectable()
export class ReplicaConnections implements OnModuleDestroy {
  private readonly sockets = new Set<Socket>();
  private stopping = false;

  /** A request of a replica route came in on `socket`. */
  track(socket: Socket): void {
    if (this.stopping) {
      socket.destroy();
      return;
    }
    if (this.sockets.has(socket)) return;
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  onModuleDestroy(): void {
    this.stopping = true;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }
}
