import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import {
  Daemon,
  FLEET_URL,
  VM_HOST_MAIN,
  enrolled,
  eventually,
  getJson,
  startAgent,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { guestImageBuildCommand, guestImagePath } from '../support/guest-image';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp, sshRun } from '../support/guest-ssh';
import { TestHost } from '../support/netns';
import { killQemusUnder, liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * What a tenant's VM can reach, measured from inside real guests (the Debian image) on two nodes,
 * each a host of its own (a network namespace, its VM_WG_IP), the controller on a third (this
 * namespace, listening on every address as a controller on its own machine would). The agents run
 * as root, so they set up the guests' firewall themselves. A prober VM on node A tries, from
 * inside its guest, every listening port of its node through the old gateway 10.0.2.2, the fleet's
 * daemon ports on node A's mesh address, on node B's and on the controller's, and a port no daemon
 * uses on the controller's machine; a VM on node B publishes 8080. With the fleet open, then again
 * secured (tokens, the agents restarted with the VMs left running). docs/securing.md's "What a VM
 * can reach" is this spec's table.
 */
jest.setTimeout(2 * GUEST_SSH_DEADLINE_MS + 180_000);

const workDir = scratchFolder('guest-isolation-');
const key = join(workDir, 'id_ed25519');
const NODE_A = 'isolation-node-a';
const NODE_B = 'isolation-node-b';
const METRICS_PORT = 9100;
/** The controller's metrics port: not one an agent knows, so named in VM_RESERVED_HOST_PORTS. */
const FLEET_METRICS_PORT = 9207;
/** A port no daemon of the fleet uses, answering on the controller's machine (the world, here). */
const OTHER_SERVICE_PORT = 18001;
/** A link-local address of node A's, as a cloud node's metadata service (169.254.169.254) has. */
const LINK_LOCAL = '169.254.77.1';
/** A port no daemon of the fleet uses, answering on node A's link-local address. */
const LINK_LOCAL_PORT = 18002;
/** Ports answered on node A's loopback and mesh address by a stand-in (Redis, etcd, a developer's controller). */
const STAND_IN_PORTS = [6379, 2379, 2380, 9203, 9206, FLEET_METRICS_PORT, 18000];
const API_TOKEN = 'isolation-api-token-0123456789abcdef';
const NODE_TOKEN = 'isolation-node-token-0123456789abcdef';

interface ListedVm {
  vm_id: string;
  state: string;
  host_ports: Array<{ host_port: number; guest_port: number; protocol: string }>;
}

/** Listens on every `host:port` given, answering `open` to whoever connects. */
const STAND_IN = String.raw`
const net = require('node:net');
for (const target of process.argv.slice(1)) {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  net.createServer((socket) => socket.end('open\n')).listen(port, host);
}
setTimeout(() => process.stdout.write('listening\n'), 200);
`;

/**
 * Connects from inside a guest to each `host:port` argument at once (perl-base only), 3 s each at
 * most, and prints `host:port open|refused|timeout|<error>` per line.
 */
const PROBE = String.raw`
use IO::Socket::INET;
$| = 1;
my @kids;
for my $target (@ARGV) {
  my $pid = fork();
  if ($pid == 0) {
    my ($host, $port) = $target =~ /^(.*):(\d+)$/;
    my $s = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port, Proto => 'tcp', Timeout => 3);
    if ($s) { print "$target open\n"; }
    elsif ($! =~ /refused/i) { print "$target refused\n"; }
    elsif ($! =~ /timed out|in progress/i || $@ =~ /timeout/i) { print "$target timeout\n"; }
    else { my $e = "$!"; $e =~ s/\s+/_/g; print "$target $e\n"; }
    exit 0;
  }
  push @kids, $pid;
}
waitpid($_, 0) for @kids;
`;

/** A tiny HTTP responder on 8080, in the guest's perl-base only. */
const WEB = String.raw`
use IO::Socket::INET;
my $tcp = IO::Socket::INET->new(LocalPort => 8080, Listen => 5, ReuseAddr => 1) or die "tcp: $!";
while (my $client = $tcp->accept) { print $client "open\n"; close $client; }
`;

/** A guest command running a perl script given here (base64: no quoting through ssh and sh). */
function perlCommand(script: string, args = '', background = false): string {
  const run = `echo ${Buffer.from(script).toString('base64')} | base64 -d > /tmp/script.pl && perl /tmp/script.pl ${args}`;
  return background ? `setsid -f sh -c '${run}' </dev/null >/dev/null 2>&1` : run;
}

/** Where this machine's cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or its unified/ beside v1). */
function cgroupV2Root(): string {
  const line = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .find((entry) => entry.split(' - ')[1]?.startsWith('cgroup2 '));
  if (!line) throw new Error('no cgroup v2 mounted');
  return line.split(' ')[4];
}

/** A process's cgroup v2 path. */
function cgroupOf(pid: number): string {
  return /^0::(.*)$/m.exec(readFileSync(`/proc/${pid}/cgroup`, 'utf8'))?.[1] ?? '';
}

describe('what a VM can reach: nothing of the fleet, its published ports and the world', () => {
  let hostA: TestHost;
  let hostB: TestHost;
  let pubkey: string;
  let forwardingBefore = '0';
  let agents: Daemon[] = [];
  const standIns: ChildProcess[] = [];
  let prober: ListedVm;
  let web: ListedVm;

  function startNodeAgent(host: TestHost, nodeId: string, env: NodeJS.ProcessEnv = {}): Daemon {
    return new Daemon(
      VM_HOST_MAIN,
      {
        VM_FLEET_ENDPOINT: `http://${host.hostAddress}:9203`,
        VM_NODE_ID: nodeId,
        VM_WG_IP: host.address,
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: join(workDir, nodeId),
        VM_DISK_RETENTION_S: '0',
        VM_BASE_IMAGE: guestImagePath(),
        VM_SSH_PUBKEY: pubkey,
        VM_METRICS_ADDR: `${host.address}:${METRICS_PORT}`,
        VM_RESERVED_HOST_PORTS: String(FLEET_METRICS_PORT),
        ...env,
      },
      [],
      [],
      host.name,
      // `ip netns exec` mounts a sysfs of the namespace's, without the cgroup file systems: cgroup
      // v2 is mounted again where a systemd host has it, in that private mount namespace.
      ['sh', '-c', 'mount -t cgroup2 cgroup2 /sys/fs/cgroup && exec "$@"', 'sh'],
    );
  }

  async function startFleet(env: NodeJS.ProcessEnv = {}): Promise<Daemon> {
    const fleet = startFleetDaemon({
      // On the address node A reaches it at, as a controller's mesh address.
      VM_FLEET_OPS_ADDR: `${hostA.hostAddress}:9206`,
      VM_FLEET_METRICS_ADDR: `${hostA.hostAddress}:${FLEET_METRICS_PORT}`,
      ...env,
    });
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    return fleet;
  }

  async function startAgents(env: NodeJS.ProcessEnv = {}): Promise<void> {
    agents = [startNodeAgent(hostA, NODE_A, env), startNodeAgent(hostB, NODE_B, env)];
    await Promise.all(agents.map((agent) => enrolled(agent)));
  }

  function standIn(netns: string | undefined, targets: string[]): Promise<void> {
    const command = [process.execPath, '-e', STAND_IN, ...targets];
    const [file, ...args] = netns ? ['ip', 'netns', 'exec', netns, ...command] : command;
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    standIns.push(child);
    return new Promise((resolve) => child.stdout.once('data', () => resolve()));
  }

  /** The TCP ports listening in node A's namespace, on any address. */
  function listeningPortsOfA(): number[] {
    const lines = execFileSync('ip', ['netns', 'exec', hostA.name, 'ss', '-Hltn'])
      .toString()
      .trim()
      .split('\n');
    return [...new Set(lines.map((line) => Number(/:(\d+)\s/.exec(line)?.[1])))].sort(
      (a, b) => a - b,
    );
  }

  /** What the prober's guest gets from each target, by target. */
  async function probe(targets: string[]): Promise<Record<string, string>> {
    const sshPort = prober.host_ports[0].host_port;
    const output = await sshRun(key, hostA.address, sshPort, perlCommand(PROBE, targets.join(' ')));
    return Object.fromEntries(
      output
        .trim()
        .split('\n')
        .map((line) => line.split(' ') as [string, string]),
    );
  }

  /** Every target, and what the prober must get from it. */
  function expectations(): Record<string, 'open' | 'closed'> {
    const closed = (host: string, ports: number[]) =>
      Object.fromEntries(ports.map((port) => [`${host}:${port}`, 'closed' as const]));
    return {
      // The gateway: QEMU's user network maps it to node A's loopback.
      ...closed('10.0.2.2', listeningPortsOfA()),
      // Node A's mesh address: its agent, its metrics, and the stand-ins there.
      ...closed(hostA.address, [9204, METRICS_PORT, 6379, 2379, 2380, 9203, 9206]),
      // Node A's link-local address (a metadata service's), whatever the port.
      ...closed(LINK_LOCAL, [LINK_LOCAL_PORT]),
      // Node B's agent and metrics.
      ...closed(hostB.address, [9204, METRICS_PORT]),
      // The controller's machine: its API, operations listener and metrics.
      ...closed(hostA.hostAddress, [9203, 9206, FLEET_METRICS_PORT]),
      // What stays reachable: a VM's published port on the other node, and the world.
      [`${hostB.address}:${web.host_ports[1].host_port}`]: 'open',
      [`${hostA.hostAddress}:${OTHER_SERVICE_PORT}`]: 'open',
    };
  }

  async function expectIsolated(): Promise<void> {
    const wanted = expectations();
    const got = await probe(Object.keys(wanted));
    console.log(`guest isolation: from inside a guest on node A: ${JSON.stringify(got)}`);
    expect(Object.keys(got).sort()).toEqual(Object.keys(wanted).sort());
    for (const [target, outcome] of Object.entries(wanted)) {
      const seen = got[target];
      if (outcome === 'open') expect(`${target} ${seen}`).toBe(`${target} open`);
      // Refused at once (a TCP reset), not left to time out: a guest's program fails fast.
      else expect(`${target} ${seen}`).toBe(`${target} refused`);
    }
  }

  beforeAll(async () => {
    if (!existsSync(guestImagePath())) {
      throw new Error(`no guest image ${guestImagePath()}: ${guestImageBuildCommand()}`);
    }
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'isolation', '-f', key]);
    pubkey = readFileSync(`${key}.pub`, 'utf8').trim();
    hostA = TestHost.create('ppn-iso-a', 43);
    hostB = TestHost.create('ppn-iso-b', 44);
    forwardingBefore = readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim();
    execFileSync('sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1']);
    for (const host of [hostA, hostB]) {
      execFileSync('ip', [
        ...['netns', 'exec', host.name, 'ip', 'route', 'add', 'default', 'via', host.hostAddress],
      ]);
    }
    execFileSync('ip', [
      'netns',
      'exec',
      hostA.name,
      'ip',
      'addr',
      'add',
      `${LINK_LOCAL}/32`,
      'dev',
      'lo',
    ]);
    await standIn(hostA.name, [
      `${LINK_LOCAL}:${LINK_LOCAL_PORT}`,
      ...STAND_IN_PORTS.map((port) => `127.0.0.1:${port}`),
      ...[6379, 2379, 2380, 9203, 9206].map((port) => `${hostA.address}:${port}`),
    ]);
    await standIn(undefined, [`0.0.0.0:${OTHER_SERVICE_PORT}`]);
    await startFleet();
    await startAgents();
    for (const agent of agents) {
      expect(agent.output).toMatch(
        /guests' network: QEMU's user network; guests' connections to this node's loopback .* and to ports .*6379.* on any address refused/,
      );
    }

    const create = async (node: string, ports: unknown[]): Promise<string> => {
      const response = await fetch(`${FLEET_URL}/v1/vms`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          vm_type: 'iso',
          ram_mb: 512,
          vcpu_count: 1,
          preferred_node: node,
          ports,
        }),
      });
      expect(response.status).toBe(201);
      return ((await response.json()) as { vm_id: string }).vm_id;
    };
    const since = Date.now();
    const [proberId, webId] = await Promise.all([
      create(NODE_A, []),
      create(NODE_B, [{ guest_port: 8080, protocol: 'tcp' }]),
    ]);
    const listed = (vmId: string) =>
      eventually(
        `${vmId} Running`,
        async () =>
          (await getJson<ListedVm[]>('/v1/vms')).find(
            (vm) => vm.vm_id === vmId && vm.state === 'Running',
          ),
        60_000,
        250,
      );
    [prober, web] = await Promise.all([listed(proberId), listed(webId)]);
    await Promise.all([
      sshOnceUp(key, hostA.address, prober.host_ports[0].host_port, 'true', {
        since,
        deadlineMs: 2 * GUEST_SSH_DEADLINE_MS,
        serialLog: join(workDir, NODE_A, 'run', proberId, 'serial.log'),
      }),
      sshOnceUp(key, hostB.address, web.host_ports[0].host_port, perlCommand(WEB, '', true), {
        since,
        deadlineMs: 2 * GUEST_SSH_DEADLINE_MS,
        serialLog: join(workDir, NODE_B, 'run', webId, 'serial.log'),
      }),
    ]);
    console.log(
      `guest isolation: both guests answered SSH ${((Date.now() - since) / 1000).toFixed(1)} s after the creates`,
    );
  });

  afterAll(async () => {
    await stopAllDaemons();
    killQemusUnder(workDir);
    for (const child of standIns) child.kill('SIGKILL');
    hostA?.remove();
    hostB?.remove();
    execFileSync('sysctl', ['-q', '-w', `net.ipv4.ip_forward=${forwardingBefore}`]);
  });

  it("on an open fleet, reaches no port of its node's loopback through 10.0.2.2 and no daemon port of any machine; another node's published port and the world answer", async () => {
    await expectIsolated();
  });

  it('on a secured fleet, after the agents restarted with their VMs running, the same', async () => {
    const qemuPids = () =>
      liveQemusUnder(workDir)
        .map(({ pid }) => pid)
        .sort();
    const pidsBefore = qemuPids();
    expect(pidsBefore).toHaveLength(2);
    await stopAllDaemons();
    // As a QEMU started by an agent before the filter (an upgrade keeps VMs running) is: outside
    // the guests' cgroup. The next agent puts it back.
    for (const pid of pidsBefore) writeFileSync(join(cgroupV2Root(), 'cgroup.procs'), `${pid}\n`);
    expect(pidsBefore.map(cgroupOf)).toEqual(['/', '/']);
    await startFleet({ VM_FLEET_API_TOKEN: API_TOKEN, VM_FLEET_NODE_TOKEN: NODE_TOKEN });
    await startAgents({ VM_FLEET_NODE_TOKEN: NODE_TOKEN });
    // The same QEMU processes: found again, not started anew.
    expect(qemuPids()).toEqual(pidsBefore);
    for (const agent of agents) expect(agent.output).not.toMatch(/ started: QEMU pid /);
    for (const agent of agents) {
      expect(agent.output).toMatch(
        /ran outside the guests' cgroup \(started before the filter\): moved into /,
      );
    }
    expect(pidsBefore.map(cgroupOf)).toEqual([
      expect.stringMatching(/\/ppn-vm-guests\./),
      expect.stringMatching(/\/ppn-vm-guests\./),
    ]);
    await expectIsolated();
  });
});

describe("an agent started as root, its guests' firewall", () => {
  afterAll(() => stopAllDaemons());

  it('is set up at start (cgroup and table) and removed when the agent stops with no VM left', async () => {
    const nodeId = 'isolation-cleanup';
    const table = 'ppn_vm_guests_isolation_cleanup';
    const agent = startAgent({
      // Nothing listens there: the agent starts all the same, and keeps trying.
      VM_FLEET_ENDPOINT: 'http://127.0.0.1:9',
      VM_NODE_ID: nodeId,
      VM_WG_IP: '127.0.0.1',
    });
    await agent.waitForOutput(/listening on 127\.0\.0\.1:9204/);
    expect(agent.output).toMatch(
      new RegExp(
        `nftables table inet ${table}, cgroup (/sys/fs/cgroup\\S*/ppn-vm-guests\\.${nodeId})\\)`,
      ),
    );
    const cgroup = new RegExp(`cgroup (\\S+ppn-vm-guests\\.${nodeId})\\)`).exec(agent.output)![1];
    expect(existsSync(cgroup)).toBe(true);
    expect(execFileSync('/usr/sbin/nft', ['list', 'table', 'inet', table]).toString()).toContain(
      `"${relative('/sys/fs/cgroup', cgroup)}" ip daddr 127.0.0.0/8 meta l4proto tcp reject with tcp reset`,
    );
    expect((await agent.stop()).code).toBe(0);
    expect(existsSync(cgroup)).toBe(false);
    expect(execFileSync('/usr/sbin/nft', ['list', 'tables']).toString()).not.toContain(table);
  });
});
