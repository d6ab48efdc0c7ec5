import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { execFile } from 'node:child_process';
import { access, constants, mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import { VmHostConfig } from '../../config/vm-host.config';
import { fleetDaemonPortsOf } from '../ports/host-ports';
import {
  GUEST_FIREWALL_TABLE,
  GuestCgroup,
  guestFirewallTable,
  STORE_PORTS,
  guestFirewallRules,
} from './guest-firewall';

/** nftables' command where Debian's nftables puts it (a PATH may hold another `nft`, e.g. npm's). */
const NFT = '/usr/sbin/nft';
/** Where nft's `socket cgroupv2` resolves cgroup paths from. */
const CGROUP_FS = '/sys/fs/cgroup';
/** Bounds the pids remembered by GuestIsolation.enclose (forgotten all at once past it). */
const MAX_ENCLOSED_PIDS = 10_000;
/** The cgroup the unit makes for the VMs' QEMU, in the agent's own (delegated) cgroup. */
export const UNIT_GUEST_CGROUP = 'vm-guests';

/**
 * How guests are kept off the node: `root`, the agent made the cgroup and loaded the rules
 * itself; `unit`, its systemd unit did both before it started; `none`, neither.
 */
export type GuestIsolationMode = 'root' | 'unit' | 'none';

/** What runs a program in the guests' cgroup, or the program itself when there is none. */
export interface GuestCommand {
  command: string;
  args: string[];
}

/** Runs `command` with `input` on its stdin; its exit status and stderr say whether it worked. */
export function runWithInput(command: string, args: string[], input?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, { timeout: 10_000 }, (error, _stdout, stderr) => {
      if (error) reject(new Error(`${command} failed: ${stderr.trim() || error.message}`));
      else resolve();
    });
    // A program that exits before reading its input (EPIPE) is judged by its exit status above,
    // never by an unhandled stream error, which would end the agent.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input ?? '');
  });
}

function writable(path: string): Promise<boolean> {
  return access(path, constants.W_OK).then(
    () => true,
    () => false,
  );
}

function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** The cgroup v2 mount point and this process's cgroup in it, or undefined without cgroup v2. */
async function ownCgroup(): Promise<{ mount: string; path: string } | undefined> {
  const mounts = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  const mount = mounts
    .split('\n')
    .map((line) => line.split(' - '))
    .find(([, fs]) => fs?.startsWith('cgroup2 '))?.[0]
    .split(' ')[4];
  const own = /^0::(\/.*)$/m.exec(await readFile('/proc/self/cgroup', 'utf8').catch(() => ''));
  return mount && own ? { mount, path: own[1] } : undefined;
}

/** A cgroup folder as nft names it; undefined when outside /sys/fs/cgroup (nft cannot name it). */
export function nftCgroupOf(mount: string, folder: string): GuestCgroup | undefined {
  const nftPath = relative(CGROUP_FS, folder);
  const inMount = relative(mount, folder);
  if (nftPath.startsWith('..') || isAbsolute(nftPath) || inMount.startsWith('..')) return undefined;
  return { nftPath, level: inMount.split(sep).filter(Boolean).length };
}

/**
 * Keeps guests' traffic off the node's loopback and the fleet's daemon ports: a guest's traffic
 * leaves the node from its QEMU's user-network sockets (QEMU maps the guest's gateway 10.0.2.2 to
 * the node's loopback), QEMU runs in a cgroup of its own, and nftables refuses those destinations
 * to that cgroup's sockets (see guest-firewall.ts). Under its unit the agent is unprivileged: the
 * unit makes the cgroup and loads the rules as root first. Started as root, the agent does both
 * itself and undoes them when it stops with no guest left. Otherwise (npm start) guests reach
 * whatever the node and the mesh serve, and it says so.
 */
@Injectable()
export class GuestIsolation implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('GuestIsolation');
  private setup?: Promise<{ mode: GuestIsolationMode; cgroupDir?: string }>;

  /** QEMU pids found in the guests' cgroup already, or moved there (see enclose). */
  private readonly enclosed = new Set<number>();

  constructor(private readonly config: VmHostConfig) {}

  /** Every port refused to guests on any address. */
  refusedPorts(): number[] {
    return [
      ...fleetDaemonPortsOf(this.config),
      ...STORE_PORTS,
      ...(this.config.reservedHostPorts ?? []),
    ];
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.ready();
  }

  /** The isolation guests get, set up once (before the first QEMU starts). */
  ready(): Promise<{ mode: GuestIsolationMode; cgroupDir?: string }> {
    this.setup ??= this.makeReady();
    return this.setup;
  }

  /** How a VM's QEMU (`command`) is started: in the guests' cgroup when there is one. */
  async guestCommand(command: string, args: string[]): Promise<GuestCommand> {
    const { mode, cgroupDir } = await this.ready();
    if (cgroupDir === undefined) return { command, args };
    // As root, an empty cgroup removed meanwhile is made again, and the rules loaded again: nft
    // resolved its path to the id of the one removed.
    if (mode === 'root' && !(await exists(cgroupDir))) await this.filter(cgroupDir);
    // The shell moves itself into the cgroup, then becomes the program: every socket it opens
    // (a socket is its creator's cgroup's for good) is the cgroup's, and so are its children.
    return {
      command: '/bin/sh',
      args: [
        '-c',
        'echo $$ > "$0" && exec "$@"',
        join(cgroupDir, 'cgroup.procs'),
        command,
        ...args,
      ],
    };
  }

  /**
   * Moves a VM's live QEMU processes into the guests' cgroup when one is outside it: a QEMU
   * started before this agent had the filter (an upgrade keeps VMs running) would otherwise stay
   * unfiltered until its next cold start. Its new connections are then filtered (a socket is its
   * creator's cgroup's when made); those already open stay until they close. Each pid is looked
   * at once.
   */
  async enclose(vmId: string, pids: readonly number[]): Promise<void> {
    const { cgroupDir } = await this.ready();
    if (cgroupDir === undefined) return;
    for (const pid of pids) {
      if (this.enclosed.has(pid)) continue;
      const cgroup = /^0::(\/.*)$/m.exec(
        await readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => ''),
      )?.[1];
      if (cgroup === undefined) continue; // gone meanwhile
      if (this.enclosed.size >= MAX_ENCLOSED_PIDS) this.enclosed.clear();
      this.enclosed.add(pid);
      if (cgroupDir.endsWith(cgroup)) continue;
      try {
        await writeFile(join(cgroupDir, 'cgroup.procs'), `${pid}\n`);
        this.logger.warn(
          `vm ${vmId}: its QEMU (pid ${pid}) ran outside the guests' cgroup (started before the filter): moved into ${cgroupDir}; its new connections are filtered, those it had open stay until they close`,
        );
      } catch (error) {
        this.logger.error(
          `vm ${vmId}: its QEMU (pid ${pid}) runs outside the guests' cgroup, UNFILTERED until its next start (stop and start it, not a forced restart): ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
  }

  private async makeReady(): Promise<{ mode: GuestIsolationMode; cgroupDir?: string }> {
    const node = `node ${this.config.nodeId}`;
    const network = "guests' network: QEMU's user network";
    try {
      const cgroup = await ownCgroup();
      if (cgroup && process.getuid!() === 0) {
        const dir = join(cgroup.mount, `ppn-vm-guests.${this.config.nodeId}`);
        await this.filter(dir);
        this.logger.log(
          `${node}: ${network}; guests' connections to this node's loopback (127.0.0.0/8, ::1; its gateway 10.0.2.2 is that loopback), but for DNS, to link-local addresses (169.254.0.0/16, fe80::/10) and to ports ${this.portList()} on any address refused (nftables table inet ${this.table()}, cgroup ${dir})`,
        );
        return { mode: 'root', cgroupDir: dir };
      }
      const unitDir = cgroup && join(cgroup.mount, cgroup.path, UNIT_GUEST_CGROUP);
      if (unitDir && (await writable(join(unitDir, 'cgroup.procs')))) {
        this.logger.log(
          `${node}: ${network}; QEMU runs in cgroup ${unitDir}, whose rules the unit loaded (table inet ${GUEST_FIREWALL_TABLE}): guests' connections to this node's loopback but for DNS, and to the fleet's ports on any address, refused`,
        );
        return { mode: 'unit', cgroupDir: unitDir };
      }
      this.logger.warn(
        `${node}: ${network}; NO filter (${process.getuid!() === 0 ? 'no cgroup v2 mounted' : `not root, and no cgroup ${UNIT_GUEST_CGROUP} from the unit`}): guests reach everything listening on this node's loopback (as 10.0.2.2) and the fleet's ports (${this.portList()}) on every address of the mesh`,
      );
    } catch (error) {
      this.logger.error(
        `${node}: ${network}; NO filter: could not set up the guests' firewall (guests reach this node's loopback as 10.0.2.2 and the fleet's ports): ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    return { mode: 'none' };
  }

  /** As root: the cgroup made, and the table loaded for it. */
  private async filter(dir: string): Promise<void> {
    const cgroup = await ownCgroup();
    const nft = cgroup && nftCgroupOf(cgroup.mount, dir);
    if (!nft) throw new Error(`cgroup v2 is mounted at ${cgroup?.mount}, not under ${CGROUP_FS}`);
    await mkdir(dir, { recursive: true });
    await runWithInput(
      NFT,
      ['-f', '-'],
      guestFirewallRules(this.table(), nft, this.refusedPorts()),
    );
  }

  private table(): string {
    return guestFirewallTable(this.config.nodeId);
  }

  private portList(): string {
    return [...new Set(this.refusedPorts())].sort((a, b) => a - b).join(', ');
  }

  /** As root: the table and the cgroup go once no guest is left in it; else both stay. */
  async onModuleDestroy(): Promise<void> {
    if (!this.setup) return;
    const { mode, cgroupDir } = await this.setup;
    if (mode !== 'root' || cgroupDir === undefined) return;
    const procs = await readFile(join(cgroupDir, 'cgroup.procs'), 'utf8').catch(() => '');
    if (procs.trim() !== '') {
      this.logger.log(
        `node ${this.config.nodeId}: guests still run; their cgroup and firewall stay until the agent's next start`,
      );
      return;
    }
    await runWithInput(NFT, ['delete', 'table', 'inet', this.table()]).catch(() => undefined);
    await rmdir(cgroupDir).catch(() => undefined);
  }
}
