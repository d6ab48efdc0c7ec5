import { ChildProcess, execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deriveNodeToken } from '@app/daemon';
import { Daemon, FLEET_MAIN, enrolled, eventually, startAgent } from './daemons';
import { guestImagePath } from './guest-image';
import {
  EtcdMemberPlace,
  etcdClientUrl,
  etcdServesReads,
  etcdStatus,
  startEtcdMember,
} from './ha-etcd-member';
import { TestHost } from './netns';
import { NodeMesh, emptied } from './node-mesh';
import { CliRun, ppnFleet } from './ppn-fleet-cli';
import { killQemusUnder } from './qemu-processes';
import { scratchFolder } from './scratch-folders';

/** The least the controller takes (fleet.config: 10..600). */
export const HA_FENCE_AFTER_S = 10;
/** The least the controller takes: more than fence_after + 2 heartbeat intervals (5 s). */
export const HA_RECOVER_AFTER_S = 21;
/** The copies' least interval (CopyPolicy.every_s). */
export const HA_COPY_EVERY_S = 30;
const SECRET = 'ha-fleet-node-secret-0123456789abcdef';
const PARTITION_TABLE = 'ppn_partition';
/** Debian's nftables by its path: under npm, `nft` is node_modules/.bin's (@vercel/nft). */
const NFT = '/usr/sbin/nft';

/** One machine: a namespace on the mesh with an etcd member, an agent and maybe a controller. */
export interface HaMachine {
  /** Its node id, and its etcd member's name. */
  nodeId: string;
  host: TestHost;
  /** The agent's VM_DISK_DIR. */
  diskDir: string;
  etcd?: ChildProcess;
  agent?: Daemon;
  controller?: Daemon;
  hasController: boolean;
}

/**
 * Three machines as the "fleet that survives any one machine" has them: each a network
 * namespace on a mesh (node-mesh.ts) with an etcd member of one cluster, an agent naming both
 * controllers (VM_FLEET_ENDPOINT, a list), and a controller on the first two; fencing and
 * recovery as short as the controller allows. A machine is killed whole (every process of its
 * namespace: member, agent, controller, QEMU) or partitioned (nft dropping all but its loopback
 * traffic, its processes alive) and healed. Needs root, under test/isolated.sh.
 */
export class HaFleet {
  readonly workDir: string;
  readonly key: string;
  readonly pubkey: string;

  private constructor(
    readonly machines: HaMachine[],
    private readonly mesh: NodeMesh,
    workDir: string,
  ) {
    this.workDir = workDir;
    this.key = join(workDir, 'id_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'ha', '-f', this.key]);
    this.pubkey = readFileSync(`${this.key}.pub`, 'utf8').trim();
  }

  /** `prefix`: the namespaces' (short, unique per spec file); `firstSubnet`: netns.ts's. */
  static async start(prefix: string, firstSubnet: number): Promise<HaFleet> {
    const letters = ['a', 'b', 'c'];
    const mesh = NodeMesh.create(
      letters.map((letter) => `${prefix}-${letter}`),
      firstSubnet,
    );
    const workDir = scratchFolder(`${prefix}-`);
    const machines = mesh.hosts.map((host, index) => ({
      nodeId: `ha-${letters[index]}`,
      host,
      diskDir: join(workDir, `ha-${letters[index]}`),
      hasController: index < 2,
    }));
    const fleet = new HaFleet(machines, mesh, workDir);
    try {
      await Promise.all(machines.map((machine) => fleet.startEtcd(machine)));
      await Promise.all(
        fleet.controllerMachines().map((machine) => fleet.startController(machine)),
      );
      await Promise.all(machines.map((machine) => fleet.startAgent(machine)));
    } catch (error) {
      fleet.remove();
      throw error;
    }
    return fleet;
  }

  machine(nodeId: string): HaMachine {
    const found = this.machines.find((machine) => machine.nodeId === nodeId);
    if (!found) throw new Error(`no machine ${nodeId}`);
    return found;
  }

  controllerMachines(): HaMachine[] {
    return this.machines.filter((machine) => machine.hasController);
  }

  private etcdPlaces(): EtcdMemberPlace[] {
    return this.machines.map((machine) => ({
      name: machine.nodeId,
      netns: machine.host.name,
      address: machine.host.address,
    }));
  }

  /** Its etcd member, started (again, keeping its data) and serving reads. */
  async startEtcd(machine: HaMachine): Promise<void> {
    const places = this.etcdPlaces();
    const place = places.find((each) => each.name === machine.nodeId)!;
    machine.etcd = startEtcdMember(place, places, join(this.workDir, 'etcd'));
    await eventually(
      `etcd member ${machine.nodeId} serving reads`,
      async () => ((await etcdServesReads(place)) ? true : undefined),
      30_000,
      200,
    );
  }

  /** Its controller on the etcd cluster, its own member first; resolves once it listens. */
  async startController(machine: HaMachine): Promise<Daemon> {
    const others = this.machines.filter((each) => each !== machine);
    const daemon = new Daemon(
      FLEET_MAIN,
      {
        VM_FLEET_ETCD_ENDPOINTS: [machine, ...others]
          .map((each) => etcdClientUrl(each.host))
          .join(','),
        VM_FLEET_FENCE_AFTER_S: String(HA_FENCE_AFTER_S),
        VM_FLEET_RECOVER_AFTER_S: String(HA_RECOVER_AFTER_S),
        VM_FLEET_OPS_ADDR: `${machine.host.address}:9206`,
        VM_FLEET_NODE_SECRET: SECRET,
      },
      [],
      [],
      machine.host.name,
    );
    machine.controller = daemon;
    await daemon.waitForOutput(/listening on 0\.0\.0\.0:9203 \(state shared in etcd at /, 60_000);
    return daemon;
  }

  /** Its agent, naming both controllers; resolves once a heartbeat was delivered. */
  async startAgent(machine: HaMachine): Promise<Daemon> {
    machine.agent = startAgent(
      {
        VM_FLEET_ENDPOINT: this.controllerMachines()
          .map((each) => `http://${each.host.address}:9203`)
          .join(','),
        VM_NODE_ID: machine.nodeId,
        VM_WG_IP: machine.host.address,
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: machine.diskDir,
        VM_BASE_IMAGE: guestImagePath(),
        VM_SSH_PUBKEY: this.pubkey,
        VM_FLEET_NODE_TOKEN: deriveNodeToken(SECRET, machine.nodeId),
        VM_COPY_MAX_MBPS: '0',
      },
      [],
      machine.host.name,
    );
    return enrolled(machine.agent);
  }

  /** The machine's power cut: every process of its namespace SIGKILLed at once, all gone. */
  async kill(machine: HaMachine): Promise<number[]> {
    const pids = machine.host.killAll();
    await emptied(machine.host);
    // Their exits seen here too, so that a dead controller is not taken for the leader.
    for (const daemon of [machine.agent, machine.controller]) await daemon?.waitForExit();
    return pids;
  }

  /** Its traffic dropped in its namespace, but for its loopback: its processes keep running. */
  partition(machine: HaMachine): void {
    execFileSync('ip', ['netns', 'exec', machine.host.name, NFT, '-f', '-'], {
      input: [
        `table inet ${PARTITION_TABLE} {`,
        '  chain input { type filter hook input priority -100; policy drop; iif "lo" accept; }',
        '  chain output { type filter hook output priority -100; policy drop; oif "lo" accept; }',
        '}',
      ].join('\n'),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    // Cut off indeed: a connection from it to another machine's etcd member does not open.
    const other = this.machines.find((each) => each !== machine)!;
    const opened = spawnSync(
      'ip',
      [
        'netns',
        'exec',
        machine.host.name,
        'timeout',
        '2',
        'bash',
        '-c',
        `</dev/tcp/${other.host.address}/2379`,
      ],
      { encoding: 'utf8' },
    );
    if (opened.status === 0) {
      const rules = execFileSync(
        'ip',
        ['netns', 'exec', machine.host.name, NFT, 'list', 'ruleset'],
        { encoding: 'utf8' },
      );
      throw new Error(
        `${machine.nodeId} still reaches ${other.nodeId} after the partition; its rules:\n${rules}`,
      );
    }
  }

  heal(machine: HaMachine): void {
    execFileSync(
      'ip',
      ['netns', 'exec', machine.host.name, NFT, 'delete', 'table', 'inet', PARTITION_TABLE],
      { stdio: 'pipe' },
    );
  }

  /** The controller machines whose controller answers, in order. */
  async answeringControllers(): Promise<HaMachine[]> {
    const answering: HaMachine[] = [];
    for (const machine of this.controllerMachines()) {
      if (!machine.controller?.alive) continue;
      try {
        const response = await fetch(`http://${machine.host.address}:9203/v1/nodes`, {
          signal: AbortSignal.timeout(3_000),
        });
        if (response.ok) answering.push(machine);
      } catch {
        // cut off or down
      }
    }
    return answering;
  }

  /** GET `path` on the first controller that answers it. */
  async getJson<T>(path: string): Promise<T> {
    for (const machine of this.controllerMachines()) {
      if (!machine.controller?.alive) continue;
      try {
        const response = await fetch(`http://${machine.host.address}:9203${path}`, {
          signal: AbortSignal.timeout(5_000),
        });
        if (response.ok) return (await response.json()) as T;
      } catch {
        // the next one
      }
    }
    throw new Error(`no controller answered GET ${path}`);
  }

  /** `ppn-fleet <args>` against `through`'s controller (API and operations listener). */
  cli(through: HaMachine, args: string[], timeoutMs?: number): Promise<CliRun> {
    return ppnFleet(
      args,
      {
        VM_FLEET_ENDPOINT: `http://${through.host.address}:9203`,
        VM_FLEET_OPS_ENDPOINT: `http://${through.host.address}:9206`,
      },
      timeoutMs,
    );
  }

  /** The controller machine whose controller says it leads now (the last such line of each). */
  async leader(timeoutMs = 30_000): Promise<HaMachine> {
    return eventually(
      'a controller leading',
      () => Promise.resolve(this.controllerMachines().find((machine) => leads(machine))),
      timeoutMs,
      200,
    );
  }

  /** The machine whose etcd member leads the cluster, as a live member sees it. */
  async etcdLeader(): Promise<HaMachine> {
    return eventually(
      'an etcd leader',
      async () => {
        const statuses = await Promise.all(this.machines.map((each) => etcdStatus(each.host)));
        const leaderId = statuses.find((status) => status)?.leader;
        const index = statuses.findIndex((status) => status?.self === leaderId);
        return index >= 0 ? this.machines[index] : undefined;
      },
      30_000,
      200,
    );
  }

  /** The node whose disk folder a QEMU process's command line names. */
  nodeOfQemu(args: string[]): string {
    const machine = this.machines.find((each) =>
      args.some((arg) => arg.includes(`${each.diskDir}/`)),
    );
    return machine?.nodeId ?? 'unknown';
  }

  /** Every process of every machine ended, the namespaces gone, the QEMUs killed. */
  remove(): void {
    for (const machine of this.machines) {
      try {
        this.heal(machine);
      } catch {
        // not partitioned
      }
    }
    this.mesh.remove();
    killQemusUnder(this.workDir);
  }
}

/** Whether the machine's live controller said last that it leads. */
function leads(machine: HaMachine): boolean {
  const controller = machine.controller;
  if (!controller?.alive) return false;
  const lines = controller.output.match(/\[Leadership\] controller \S+ (is the leader|follows)/g);
  return lines?.at(-1)?.includes('is the leader') ?? false;
}
