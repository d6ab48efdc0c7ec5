import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { deriveNodeToken } from '@app/daemon';
import { NODE_STALE_AFTER_MS } from '@app/fleet-domain';
import {
  Daemon,
  FLEET_URL,
  enrolled,
  eventually,
  getJson,
  startAgent,
  startFleetDaemon,
} from './daemons';
import { guestImageBuildCommand, guestImagePath } from './guest-image';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp } from './guest-ssh';
import { TestHost } from './netns';
import { ppnFleet } from './ppn-fleet-cli';

/**
 * The set-up the copies system specs share (test/system/vm-replicas*, vm-copy-restore,
 * vm-restore-pull): the Debian guest with an SSH key of the spec's own, agents that copy at
 * full speed with per-node tokens, a VM listed with its copy, and a copied guest with a file
 * written and synced before a copy was taken.
 */

/** How long a spec waits for a copy: a first full one of the guest on a loaded machine. */
export const COPY_WAIT_MS = 240_000;

/** A VM as GET /v1/vms lists it, with what the copies specs read. */
export interface ListedCopiedVm {
  vm_id: string;
  node_id: string;
  state: string;
  host_ports: Array<{ host_port: number; guest_port: number; protocol: string }>;
  copied_at?: string | null;
  copy_node_id?: string | null;
  node_silent_since?: string;
}

export const listedVm = async (vmId: string): Promise<ListedCopiedVm | undefined> =>
  (await getJson<ListedCopiedVm[]>('/v1/vms')).find(({ vm_id }) => vm_id === vmId);

/** The guest image there (else the command that builds it), and a new SSH key in `workDir`. */
export function guestAndKey(workDir: string, comment: string): { key: string; pubkey: string } {
  if (!existsSync(guestImagePath())) {
    throw new Error(`no guest image ${guestImagePath()}: ${guestImageBuildCommand()}`);
  }
  const key = join(workDir, 'id_ed25519');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', key]);
  return { key, pubkey: readFileSync(`${key}.pub`, 'utf8').trim() };
}

/** Where a node's agent runs: in a network namespace of its own, or on a loopback address. */
export interface NodePlace {
  /** Its VM_WG_IP: where its published ports answer. */
  address: string;
  /** The controller as the node reaches it. */
  endpoint: string;
  netns?: string;
}

export const inNamespace = (host: TestHost): NodePlace => ({
  address: host.address,
  endpoint: `http://${host.hostAddress}:9203`,
  netns: host.name,
});

export const onLoopback = (address: string): NodePlace => ({ address, endpoint: FLEET_URL });

/**
 * An agent with the guest image, the spec's key, a token derived from `secret`, its disks in
 * `<workDir>/<nodeId>`, heartbeating every second, copying unthrottled; resolved once enrolled.
 */
export function startCopiesNode(
  nodeId: string,
  place: NodePlace,
  setUp: { workDir: string; pubkey: string; secret: string },
  env: NodeJS.ProcessEnv = {},
): Promise<Daemon> {
  return enrolled(
    startAgent(
      {
        VM_FLEET_ENDPOINT: place.endpoint,
        VM_NODE_ID: nodeId,
        VM_WG_IP: place.address,
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: join(setUp.workDir, nodeId),
        VM_BASE_IMAGE: guestImagePath(),
        VM_SSH_PUBKEY: setUp.pubkey,
        VM_FLEET_NODE_TOKEN: deriveNodeToken(setUp.secret, nodeId),
        VM_COPY_MAX_MBPS: '0',
        ...env,
      },
      [],
      place.netns,
    ),
  );
}

/**
 * The built controller with node secret `secret`, whose monotonic clock jumps past the 30 s
 * silence on SIGUSR2 (monotonic-clock-jump.cjs): every node silent at once, the live ones back
 * at their next heartbeat. Resolved once it listens.
 */
export async function startJumpingFleet(secret: string): Promise<Daemon> {
  const fleet = startFleetDaemon(
    { VM_FLEET_NODE_SECRET: secret, MONOTONIC_JUMP_MS: String(NODE_STALE_AFTER_MS + 2_000) },
    ['--require', join(__dirname, 'monotonic-clock-jump.cjs')],
  );
  await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
  return fleet;
}

/** What the guest answers over SSH: the file's sum, its host key and its hostname. */
export const GUEST_PROBE = 'sha256sum ~/kept && cat /etc/ssh/ssh_host_ed25519_key.pub && hostname';

export interface CopiedGuest {
  vmId: string;
  createdAt: number;
  /** As listed once running. */
  before: ListedCopiedVm;
  /** The guest's SSH port on its node. */
  sshPort: number;
  /** GUEST_PROBE's answer after the file was written. */
  probed: string;
  /** As listed once a copy taken after the write is held. */
  copied: ListedCopiedVm;
}

/**
 * `ppn-fleet vm create` of a 512 MB VM of type `type` on node `nodeId` (reached at `address`),
 * copied every 30 s, port `webPort` published to 80; a 1 MiB file written and synced in the
 * guest over SSH; then a copy whose point in time (taken_at, when it began) is after the write,
 * listed (a copy under way during the write is not).
 */
export async function copiedGuestWithFile(
  setUp: { workDir: string; key: string },
  vm: { type: string; nodeId: string; address: string; webPort: number },
): Promise<CopiedGuest> {
  const createdAt = Date.now();
  const created = await ppnFleet([
    'vm',
    'create',
    '--type',
    vm.type,
    '--ram',
    '512',
    '--vcpus',
    '1',
    '--node',
    vm.nodeId,
    '--port',
    `${vm.webPort}:80`,
    '--copies',
    '1',
    '--copy-every',
    '30',
    '--json',
  ]);
  expect(created.code).toBe(0);
  const vmId = (JSON.parse(created.stdout) as { vm_id: string }).vm_id;
  const before = await eventually(
    `${vmId} running`,
    async () => {
      const listed = await listedVm(vmId);
      return listed?.state === 'Running' && listed.host_ports.length > 0 ? listed : undefined;
    },
    60_000,
    250,
  );
  const sshPort = before.host_ports[0].host_port;
  const probed = await sshOnceUp(
    setUp.key,
    vm.address,
    sshPort,
    `head -c 1048576 /dev/urandom > ~/kept && sync && ${GUEST_PROBE}`,
    {
      since: createdAt,
      deadlineMs: GUEST_SSH_DEADLINE_MS,
      serialLog: join(setUp.workDir, vm.nodeId, 'run', vmId, 'serial.log'),
    },
  );
  expect(probed).toContain(`${vm.type}-${vmId.slice(-8)}`);
  const writtenAt = Date.now();
  const copied = await eventually(
    'a copy taken after the write, listed',
    async () => {
      const listed = await listedVm(vmId);
      return listed?.copy_node_id && listed.copied_at && Date.parse(listed.copied_at) > writtenAt
        ? listed
        : undefined;
    },
    COPY_WAIT_MS,
    250,
  );
  expect(Date.parse(copied.copied_at!)).toBeGreaterThan(createdAt);
  return { vmId, createdAt, before, sshPort, probed, copied };
}

/**
 * The controller's clock jumped (SIGUSR2 to `fleet`, started by startJumpingFleet): resolved once
 * the VM's node `sourceId` is silent and every node of `liveIds` is live again.
 */
export async function jumpUntilSilent(
  fleet: Daemon,
  vmId: string,
  sourceId: string,
  liveIds: string[],
): Promise<void> {
  fleet.process.kill('SIGUSR2');
  // The jump makes every node silent at once: the live ones are back at their next heartbeat.
  await eventually(
    `${sourceId} silent, ${liveIds.join(' and ')} live`,
    async () => {
      const live = (await getJson<Array<{ node_id: string }>>('/v1/nodes')).map(
        ({ node_id }) => node_id,
      );
      const silent = (await listedVm(vmId))?.node_silent_since !== undefined;
      return silent && liveIds.every((id) => live.includes(id)) && !live.includes(sourceId)
        ? true
        : undefined;
    },
    30_000,
    200,
  );
}

/**
 * The restored guest runs on node `nodeId` (reached at `address`) with the ports it had, and
 * answers GUEST_PROBE as before: the file synced before the copy, the host key and the hostname
 * from its id, the same guest.
 */
export async function expectSameGuest(
  setUp: { workDir: string; key: string },
  guest: CopiedGuest,
  on: { nodeId: string; address: string; restoredAt: number },
): Promise<void> {
  const after = await eventually(
    `${guest.vmId} running on ${on.nodeId}`,
    async () => {
      const listed = await listedVm(guest.vmId);
      return listed?.node_id === on.nodeId && listed.state === 'Running' ? listed : undefined;
    },
    120_000,
    500,
  );
  expect(after.host_ports).toEqual(guest.before.host_ports);
  const probed = await sshOnceUp(setUp.key, on.address, guest.sshPort, GUEST_PROBE, {
    since: on.restoredAt,
    deadlineMs: GUEST_SSH_DEADLINE_MS,
    serialLog: join(setUp.workDir, on.nodeId, 'run', guest.vmId, 'serial.log'),
  });
  expect(probed).toBe(guest.probed);
}
