import { ChildProcess, spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';

/** An etcd member's client and peer ports, as on a machine of its own (its namespace's address). */
export const ETCD_CLIENT_PORT = 2379;
const ETCD_PEER_PORT = 2380;

/** One member of the three-machine cluster: its machine's namespace and address. */
export interface EtcdMemberPlace {
  name: string;
  netns: string;
  address: string;
}

/**
 * A real etcd member (Debian's etcd-server) started inside its machine's network namespace, on
 * that machine's address, data in `dataRoot/<name>`: killed with the machine (every process of
 * the namespace) and started again, it keeps its data and rejoins. Plain HTTP, as the tests'
 * other etcd clusters (etcd-cluster.ts); the TLS settings are the controller's config specs'.
 */
export function startEtcdMember(
  member: EtcdMemberPlace,
  all: EtcdMemberPlace[],
  dataRoot: string,
): ChildProcess {
  const peer = (each: EtcdMemberPlace) => `http://${each.address}:${ETCD_PEER_PORT}`;
  const client = etcdClientUrl(member);
  const child = spawn(
    'ip',
    [
      ...['netns', 'exec', member.netns, 'etcd'],
      ...['--name', member.name, '--data-dir', join(dataRoot, member.name)],
      ...['--listen-client-urls', `${client},http://127.0.0.1:${ETCD_CLIENT_PORT}`],
      ...['--advertise-client-urls', client],
      ...['--listen-peer-urls', peer(member), '--initial-advertise-peer-urls', peer(member)],
      ...['--initial-cluster', all.map((each) => `${each.name}=${peer(each)}`).join(',')],
      ...['--initial-cluster-token', 'ppn-ha-test', '--initial-cluster-state', 'new'],
      ...['--log-level', 'warn', '--logger', 'zap'],
    ],
    { stdio: ['ignore', 'ignore', 'ignore'] },
  );
  // Its exit is the machine's kill or the suite's end; nothing waits on it.
  child.on('error', () => undefined);
  return child;
}

export function etcdClientUrl(member: { address: string }): string {
  return `http://${member.address}:${ETCD_CLIENT_PORT}`;
}

/** Whether the member serves a linearizable read: it is up and its cluster has a leader. */
export function etcdServesReads(member: { address: string }): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpRequest(
      `${etcdClientUrl(member)}/v3/kv/range`,
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

/** The member's id of the cluster's leader and its own, from its status (for "kill the etcd leader"). */
export async function etcdStatus(member: {
  address: string;
}): Promise<{ leader: string; self: string } | undefined> {
  try {
    const response = await fetch(`${etcdClientUrl(member)}/v3/maintenance/status`, {
      method: 'POST',
      body: '{}',
      signal: AbortSignal.timeout(1_000),
    });
    if (!response.ok) return undefined;
    const status = (await response.json()) as { leader?: string; header?: { member_id?: string } };
    if (!status.leader || !status.header?.member_id) return undefined;
    return { leader: status.leader, self: status.header.member_id };
  } catch {
    return undefined;
  }
}
