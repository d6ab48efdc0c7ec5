import { spawn } from 'node:child_process';
import { Socket, connect } from 'node:net';

/** A port whose SYNs go unanswered; close() ends it. */
export interface UnansweredPort {
  port: number;
  close(): void;
}

/**
 * A TCP port on 127.0.0.1 whose SYNs go unanswered, as behind a firewall that drops them,
 * without root: a listener (backlog 1) in a process stopped with SIGSTOP, so it accepts
 * nothing, its accept queue filled by two connections of ours. Linux then drops every further
 * SYN to it: a connect waits, neither refused nor answered.
 */
export async function unansweredPort(): Promise<UnansweredPort> {
  const listener = spawn(
    process.execPath,
    [
      '-e',
      "require('node:net').createServer().listen({ port: 0, host: '127.0.0.1', backlog: 1 }, function () { process.stdout.write(this.address().port + '\\n'); })",
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    listener.once('error', reject);
    listener.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
  });
  listener.kill('SIGSTOP');
  const held: Socket[] = [];
  for (let filled = 0; filled < 2; filled++) {
    held.push(
      await new Promise<Socket>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => resolve(socket));
        socket.once('error', reject);
      }),
    );
  }
  return {
    port,
    close: () => {
      for (const socket of held) socket.destroy();
      listener.kill('SIGKILL');
    },
  };
}
