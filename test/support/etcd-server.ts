import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
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
  /** With TLS: the files made for it (PEM), in the scratch folder. */
  readonly tls?: { ca: string; cert: string; key: string; clientCert: string; clientKey: string };

  private constructor(
    readonly port: number,
    private readonly peerPort: number,
    private readonly folder: string,
    private readonly listen: string[],
    tls: boolean,
    private readonly settings: string[],
  ) {
    if (tls) this.tls = makeCertificates(folder);
  }

  /** The client URL on loopback. */
  get endpoint(): string {
    return `${this.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  /**
   * `settings`: more of its command line (e.g. `--max-txn-ops`).
   * `tls`: its client URLs are https:// only, with a certificate of a CA of its own, and it
   * takes only clients with a certificate of that CA (--client-cert-auth).
   */
  static async start(
    listen: string[] = [],
    options: { tls?: boolean; settings?: string[] } = {},
  ): Promise<EtcdServer> {
    const server = new EtcdServer(
      await freePort(),
      await freePort(),
      scratchFolder('etcd-'),
      listen,
      options.tls ?? false,
      options.settings ?? [],
    );
    await server.start();
    return server;
  }

  async start(): Promise<void> {
    const scheme = this.tls ? 'https' : 'http';
    const clientUrls = ['127.0.0.1', ...this.listen].map((ip) => `${scheme}://${ip}:${this.port}`);
    const tlsFlags = this.tls
      ? [
          '--cert-file',
          this.tls.cert,
          '--key-file',
          this.tls.key,
          '--trusted-ca-file',
          this.tls.ca,
          '--client-cert-auth',
        ]
      : [];
    const peer = `http://127.0.0.1:${this.peerPort}`;
    const child = spawn(
      'etcd',
      [
        '--name',
        'test',
        '--data-dir',
        join(this.folder, 'data'),
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
        ...tlsFlags,
        ...this.settings,
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
        this.post('/v3/kv/range', { key: Buffer.from('ready').toString('base64') }).then(
          (reply) => reply.status === 200,
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
    const reply = await this.post('/v3/kv/range', {
      key: Buffer.from(prefix).toString('base64'),
      range_end: bytes.toString('base64'),
      keys_only: true,
    });
    const { kvs = [] } = JSON.parse(reply.body) as { kvs?: Array<{ key: string }> };
    return kvs.map((kv) => Buffer.from(kv.key, 'base64').toString());
  }

  /** Deletes every key under `prefix`. */
  async clear(prefix = 'ppn-fleet/'): Promise<void> {
    const bytes = Buffer.from(prefix);
    bytes[bytes.length - 1]++;
    await this.post('/v3/kv/deleterange', {
      key: Buffer.from(prefix).toString('base64'),
      range_end: bytes.toString('base64'),
    });
  }

  /**
   * Turns etcd's auth on: a root user, and `user` with `password` and read-write access to the
   * ppn-fleet/ keys only (as docs/operating.md sets it up). The helpers above need no
   * credentials, so they are of no use after this.
   */
  async enableAuth(user: string, password: string): Promise<void> {
    const call = async (path: string, body: unknown) => {
      const reply = await this.post(`/v3/auth/${path}`, body);
      if (reply.status !== 200) throw new Error(`${path}: ${reply.status} ${reply.body}`);
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

  /** A POST to its JSON gateway, with the test client's certificate when it has TLS. */
  private post(path: string, body: unknown): Promise<{ status: number; body: string }> {
    const tls = this.tls;
    const send = tls ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(
        `${this.endpoint}${path}`,
        {
          method: 'POST',
          ...(tls && {
            ca: readFileSync(tls.ca),
            cert: readFileSync(tls.clientCert),
            key: readFileSync(tls.clientKey),
          }),
        },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
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

/**
 * A CA of the test's own, a server certificate for 127.0.0.1 and a client certificate, made
 * with openssl in `folder` (keys 0600).
 */
function makeCertificates(folder: string) {
  const path = (name: string) => join(folder, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  const key = (name: string) => {
    // PKCS#8 (-----BEGIN PRIVATE KEY-----), as most tools write keys.
    openssl(
      'genpkey',
      '-algorithm',
      'EC',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-out',
      path(name),
    );
    chmodSync(path(name), 0o600);
  };
  key('ca.key');
  openssl(
    'req',
    '-x509',
    '-new',
    '-key',
    path('ca.key'),
    '-subj',
    '/CN=test etcd CA',
    '-days',
    '2',
    '-out',
    path('ca.pem'),
  );
  // The server's also serves as a client: etcd's JSON gateway dials etcd itself with it.
  const signed = (name: string, subject: string, extensions: string) => {
    key(`${name}.key`);
    openssl(
      'req',
      '-new',
      '-key',
      path(`${name}.key`),
      '-subj',
      subject,
      '-out',
      path(`${name}.csr`),
    );
    writeFileSync(path(`${name}.ext`), extensions);
    openssl(
      'x509',
      '-req',
      '-in',
      path(`${name}.csr`),
      '-CA',
      path('ca.pem'),
      '-CAkey',
      path('ca.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      path(`${name}.ext`),
      '-out',
      path(`${name}.pem`),
    );
  };
  signed(
    'server',
    '/CN=etcd',
    'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n',
  );
  signed('client', '/CN=fleet', 'extendedKeyUsage=clientAuth\n');
  return {
    ca: path('ca.pem'),
    cert: path('server.pem'),
    key: path('server.key'),
    clientCert: path('client.pem'),
    clientKey: path('client.key'),
  };
}
