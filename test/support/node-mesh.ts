import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { eventually } from './daemons';
import { TestHost } from './netns';

const FORWARDING = '/proc/sys/net/ipv4/ip_forward';

/**
 * Nodes on a mesh, each a test host of its own (a network namespace, `TestHost`) whose default
 * route is its veth to this namespace, which forwards between them: agents reach each other at
 * their VM_WG_IP as on separate machines, and the controller, here, at their host's
 * `hostAddress`. A node killed whole (`TestHost.killAll`) is every process of its namespace:
 * its agent and the QEMU processes it started. Needs root; under test/isolated.sh the
 * forwarding switched on is the run's own namespace's, and `remove()` puts it back.
 */
export class NodeMesh {
  private constructor(
    readonly hosts: TestHost[],
    private readonly forwardingBefore: string,
  ) {}

  /** One host per name, on subnets `firstSubnet`, `firstSubnet + 1`, ... (netns.ts). */
  static create(names: string[], firstSubnet: number): NodeMesh {
    const forwardingBefore = readFileSync(FORWARDING, 'utf8').trim();
    const hosts = names.map((name, index) => TestHost.create(name, firstSubnet + index));
    execFileSync('sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1']);
    for (const host of hosts) {
      execFileSync('ip', [
        ...['netns', 'exec', host.name, 'ip', 'route', 'add', 'default'],
        ...['via', host.hostAddress],
      ]);
    }
    return new NodeMesh(hosts, forwardingBefore);
  }

  /** Whatever still runs on a host killed, the namespaces deleted, forwarding as it was. */
  remove(): void {
    for (const host of this.hosts) {
      host.killAll();
      host.remove();
    }
    execFileSync('sysctl', ['-q', '-w', `net.ipv4.ip_forward=${this.forwardingBefore}`]);
  }
}

/** Resolves once no process is left in the host's namespace (those killed gone). */
export function emptied(host: TestHost, timeoutMs = 15_000): Promise<true> {
  return eventually(
    `no process left on ${host.name}`,
    () => Promise.resolve(host.processes().length === 0 ? true : undefined),
    timeoutMs,
    100,
  );
}
