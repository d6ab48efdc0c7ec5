import { Socket, connect } from 'node:net';

/** The status QMP's query-status reports: running, paused, shutdown, prelaunch, ... */
export interface QmpStatus {
  status: string;
  running: boolean;
}

/**
 * One short QMP session over a VM's unix socket: greeting, capabilities, then commands.
 * QEMU answers commands in order; events interleave and are skipped.
 */
export class QmpSession {
  private buffer = '';
  private readonly waiting: Array<{
    resolve: (value: unknown) => void;
    reject: (error: Error) => void;
  }> = [];
  private failure?: Error;

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.receive(chunk));
    socket.on('error', (error) => this.fail(error));
    socket.on('close', () => this.fail(new Error('QMP socket closed')));
  }

  static async open(path: string, timeoutMs: number): Promise<QmpSession> {
    const socket = connect(path);
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`QMP silent for ${timeoutMs} ms`)));
    const session = new QmpSession(socket);
    await session.next(); // the greeting
    await session.execute('qmp_capabilities');
    return session;
  }

  async execute(command: string, args?: Record<string, unknown>): Promise<unknown> {
    this.socket.write(
      JSON.stringify(args ? { execute: command, arguments: args } : { execute: command }) + '\n',
    );
    const reply = (await this.next()) as { return?: unknown; error?: { desc?: string } };
    if (reply.error) throw new Error(`QMP ${command}: ${reply.error.desc ?? 'error'}`);
    return reply.return;
  }

  close(): void {
    this.socket.destroy();
  }

  private next(): Promise<unknown> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  private receive(chunk: string): void {
    this.buffer += chunk;
    let newline: number;
    while ((newline = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, newline).trim();
      this.buffer = this.buffer.slice(newline + 1);
      if (!line) continue;
      let message: { event?: unknown };
      try {
        message = JSON.parse(line) as { event?: unknown };
      } catch {
        this.fail(new Error('QMP sent something that is not JSON'));
        return;
      }
      if (message.event !== undefined) continue;
      this.waiting.shift()?.resolve(message);
    }
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const waiter of this.waiting.splice(0)) waiter.reject(this.failure);
  }
}

/** Runs one QMP exchange and closes the socket, whatever happens. */
export async function withQmp<T>(
  path: string,
  timeoutMs: number,
  work: (session: QmpSession) => Promise<T>,
): Promise<T> {
  const session = await QmpSession.open(path, timeoutMs);
  try {
    return await work(session);
  } finally {
    session.close();
  }
}
