import { ChildProcess, spawn } from 'node:child_process';
import { freePort } from './redis-server';
import { scratchFolder } from './scratch-folders';

/** Every etcd started and not yet exited: stopAllEtcdServers() ends them. */
const running = new Set<ChildProcess>();

/** Stops every etcd still running: after each spec file (spec-file.setup.ts). */
export async function stopAllEtcdServers(): Promise<void> {
  await Promise.all(
    [...running].map((child) => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      return exited;
    }),
  );
}

/**
 * A real etcd (Debian's etcd-server) of the test's own: one member, its data in a scratch
 * folder (removed after the spec file), on free loopback ports, or also on `listen` addresses
 * (test hosts' host ends). Stopped and started again, it keeps its data and ports.
 */
export class EtcdServer {
  private child?: ChildProcess;

  private constructor(
    readonly port: number,
    private readonly peerPort: number,
    private readonly dataDir: string,
    private readonly listen: string[],
  ) {}

  /** The client URL on loopback. */
  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  static async start(listen: string[] = []): Promise<EtcdServer> {
    const server = new EtcdServer(
      await freePort(),
      await freePort(),
      scratchFolder('etcd-'),
      listen,
    );
    await server.start();
    return server;
  }

  async start(): Promise<void> {
    const clientUrls = ['127.0.0.1', ...this.listen].map((ip) => `http://${ip}:${this.port}`);
    const peer = `http://127.0.0.1:${this.peerPort}`;
    const child = spawn(
      'etcd',
      [
        '--name',
        'test',
        '--data-dir',
        this.dataDir,
        '--listen-client-urls',
        clientUrls.join(','),
        '--advertise-client-urls',
        this.endpoint,
        '--listen-peer-urls',
        peer,
        '--initial-advertise-peer-urls',
        peer,
        '--initial-cluster',
        `test=${peer}`,
        '--log-level',
        'warn',
        '--logger',
        'zap',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    running.add(child);
    this.child = child;
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code) => {
        running.delete(child);
        reject(new Error(`etcd exited ${code}:\n${output}`));
      }),
    );
    exited.catch(() => undefined);
    // Ready once it serves a read through its JSON gateway.
    const deadline = Date.now() + 15_000;
    for (;;) {
      const ready = await Promise.race([
        fetch(`${this.endpoint}/v3/kv/range`, {
          method: 'POST',
          body: JSON.stringify({ key: Buffer.from('ready').toString('base64') }),
        }).then(
          (response) => response.ok,
          () => false,
        ),
        exited,
      ]);
      if (ready) return;
      if (Date.now() > deadline) throw new Error(`etcd did not start:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Every key under `prefix` (the test's own view of what the controller stored). */
  async keys(prefix = 'ppn-fleet/'): Promise<string[]> {
    const bytes = Buffer.from(prefix);
    bytes[bytes.length - 1]++;
    const response = await fetch(`${this.endpoint}/v3/kv/range`, {
      method: 'POST',
      body: JSON.stringify({
        key: Buffer.from(prefix).toString('base64'),
        range_end: bytes.toString('base64'),
        keys_only: true,
      }),
    });
    const { kvs = [] } = (await response.json()) as { kvs?: Array<{ key: string }> };
    return kvs.map((kv) => Buffer.from(kv.key, 'base64').toString());
  }

  /** Deletes every key under `prefix`. */
  async clear(prefix = 'ppn-fleet/'): Promise<void> {
    const bytes = Buffer.from(prefix);
    bytes[bytes.length - 1]++;
    await fetch(`${this.endpoint}/v3/kv/deleterange`, {
      method: 'POST',
      body: JSON.stringify({
        key: Buffer.from(prefix).toString('base64'),
        range_end: bytes.toString('base64'),
      }),
    });
  }

  /**
   * Turns etcd's auth on: a root user, and `user` with `password` and read-write access to the
   * ppn-fleet/ keys only (as docs/operating.md sets it up). The helpers above need no
   * credentials, so they are of no use after this.
   */
  async enableAuth(user: string, password: string): Promise<void> {
    const call = async (path: string, body: unknown) => {
      const response = await fetch(`${this.endpoint}/v3/auth/${path}`, {
        method: 'POST',
        body: JSON.stringify(body),
      });
      if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    };
    const b64 = (text: string) => Buffer.from(text).toString('base64');
    await call('user/add', { name: 'root', password: 'root-password-of-the-test' });
    await call('role/add', { name: 'root' });
    await call('user/grant', { user: 'root', role: 'root' });
    await call('user/add', { name: user, password });
    await call('role/add', { name: 'fleet' });
    await call('role/grant', {
      name: 'fleet',
      perm: { permType: 'READWRITE', key: b64('ppn-fleet/'), range_end: b64('ppn-fleet0') },
    });
    await call('user/grant', { user, role: 'fleet' });
    await call('enable', {});
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    running.delete(child);
  }
}
