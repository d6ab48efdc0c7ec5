import { ChildProcess, spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { freePort } from './redis-server';
import { scratchFolder } from './scratch-folders';

/** Every member started and not yet exited: stopAllEtcdClusters() ends them. */
const running = new Set<ChildProcess>();

/** Stops every member still running (spec files call it after their tests). */
export async function stopAllEtcdClusters(): Promise<void> {
  await Promise.all(
    [...running].map((child) => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      return exited;
    }),
  );
}

interface Member {
  name: string;
  clientPort: number;
  peerPort: number;
  child?: ChildProcess;
}

/**
 * A real etcd cluster of `size` members (Debian's etcd-server) on free loopback ports, plain
 * HTTP, data in a scratch folder: a member stopped and started again keeps its data and ports,
 * so a test can take the cluster's majority away and give it back.
 */
export class EtcdCluster {
  private constructor(
    private readonly members: Member[],
    private readonly folder: string,
  ) {}

  static async start(size = 3): Promise<EtcdCluster> {
    const members: Member[] = [];
    for (let index = 1; index <= size; index++) {
      members.push({ name: `m${index}`, clientPort: await freePort(), peerPort: await freePort() });
    }
    const cluster = new EtcdCluster(members, scratchFolder('etcd-cluster-'));
    await Promise.all(members.map((_, index) => cluster.startMember(index)));
    return cluster;
  }

  /** Every member's client URL, comma-separated: VM_FLEET_ETCD_ENDPOINTS. */
  get endpoints(): string {
    return this.members.map((member) => endpointOf(member)).join(',');
  }

  async startMember(index: number): Promise<void> {
    const member = this.members[index];
    const peer = (each: Member) => `http://127.0.0.1:${each.peerPort}`;
    const child = spawn(
      'etcd',
      [
        '--name',
        member.name,
        '--data-dir',
        join(this.folder, member.name),
        '--listen-client-urls',
        endpointOf(member),
        '--advertise-client-urls',
        endpointOf(member),
        '--listen-peer-urls',
        peer(member),
        '--initial-advertise-peer-urls',
        peer(member),
        '--initial-cluster',
        this.members.map((each) => `${each.name}=${peer(each)}`).join(','),
        '--initial-cluster-token',
        'ppn-test',
        '--initial-cluster-state',
        'new',
        '--log-level',
        'warn',
        '--logger',
        'zap',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    running.add(child);
    member.child = child;
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', () => running.delete(child));
    // Ready once it serves a read (so once the cluster has a leader).
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`etcd ${member.name} exited:\n${output}`);
      if (await this.answers(member)) return;
      if (Date.now() > deadline) throw new Error(`etcd ${member.name} did not start:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** SIGKILLs the member (a machine losing power), its data kept. */
  async killMember(index: number): Promise<void> {
    const child = this.members[index].child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    await Promise.all(this.members.map((_, index) => this.killMember(index)));
  }

  private answers(member: Member): Promise<boolean> {
    return new Promise((resolve) => {
      const req = httpRequest(
        `${endpointOf(member)}/v3/kv/range`,
        { method: 'POST', timeout: 1_000 },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode === 200));
        },
      );
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(false));
      req.end(JSON.stringify({ key: Buffer.from('ready').toString('base64') }));
    });
  }
}

function endpointOf(member: Member): string {
  return `http://127.0.0.1:${member.clientPort}`;
}
