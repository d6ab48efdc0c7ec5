import { ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';

/** Every redis-server started and not yet exited: stopAllRedisServers() ends them. */
const running = new Set<ChildProcess>();

/** Stops every redis-server still running: after each spec file (spec-file.cleanup.ts). */
export async function stopAllRedisServers(): Promise<void> {
  await Promise.all(
    [...running].map((child) => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      return exited;
    }),
  );
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });
}

/** A real redis-server of the test's own, on a free loopback port, without persistence. */
export class RedisServer {
  private child?: ChildProcess;

  private constructor(
    readonly port: number,
    private readonly bind: string[],
    private readonly settings: string[],
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /**
   * `bind`: the addresses it listens on besides 127.0.0.1 (test hosts' host ends); `settings`:
   * more of its command line, after (so over) the defaults below, e.g. `--requirepass`.
   */
  static async start(
    port?: number,
    bind: string[] = [],
    settings: string[] = [],
  ): Promise<RedisServer> {
    const server = new RedisServer(port ?? (await freePort()), bind, settings);
    await server.start();
    return server;
  }

  /** Starts (again) on the same port. */
  async start(): Promise<void> {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        ['127.0.0.1', ...this.bind].join(' '),
        // Only this machine and the test hosts it made can reach it.
        '--protected-mode',
        'no',
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'no',
        ...this.settings,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    running.add(child);
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(
        () => reject(new Error(`redis-server did not start:\n${output}`)),
        10_000,
      );
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.on('exit', (code) => {
        running.delete(child);
        clearTimeout(timer);
        reject(new Error(`redis-server exited ${code}:\n${output}`));
      });
    });
  }

  async stop(): Promise<void> {
    const child = this.child;
    // Already exited, by itself or killed (then exitCode is null and signalCode says by what).
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    running.delete(child);
  }
}
