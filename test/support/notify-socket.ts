import { ChildProcess, spawn } from 'node:child_process';
import { eventually } from './daemons';

/**
 * A stand-in for systemd's notify socket (NOTIFY_SOCKET), where no systemd runs units: systemd's
 * own systemd-socket-activate binds a unix datagram socket and hands it to `cat`, which prints
 * every message. Reading without room for ancillary data closes the file descriptor
 * systemd-notify passes for its barrier, releasing it, as systemd does.
 */
export class NotifySocket {
  /** Every message received, in order, not separated. */
  received = '';
  private readonly process: ChildProcess;

  constructor(readonly path: string) {
    this.process = spawn(
      'systemd-socket-activate',
      ['--datagram', '--listen', path, 'sh', '-c', 'exec cat <&3'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.process.stdout!.on('data', (chunk: Buffer) => (this.received += chunk.toString('utf8')));
  }

  /** Resolves once the socket is bound (systemd-socket-activate says so on stderr). */
  listening(): Promise<void> {
    return new Promise((resolve, reject) => {
      let said = '';
      this.process.once('error', reject);
      this.process.stderr!.on('data', (chunk: Buffer) => {
        said += chunk.toString('utf8');
        if (said.includes('Listening on')) resolve();
      });
      this.process.once('exit', () => reject(new Error(`notify socket ended: ${said}`)));
    });
  }

  /** Resolves with what was received once it includes READY=1. */
  ready(): Promise<string> {
    return eventually(
      `READY=1 on ${this.path}`,
      () => Promise.resolve(this.received.includes('READY=1') ? this.received : undefined),
      20_000,
      20,
    );
  }

  close(): void {
    this.process.kill();
  }
}
