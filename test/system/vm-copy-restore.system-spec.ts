import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { deriveNodeToken } from '@app/daemon';
import { NODE_STALE_AFTER_MS } from '@app/fleet-domain';
import {
  Daemon,
  enrolled,
  eventually,
  getJson,
  startAgent,
  startFleetDaemon,
  stopAllDaemons,
} from '../support/daemons';
import { guestImageBuildCommand, guestImagePath } from '../support/guest-image';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp } from '../support/guest-ssh';
import { ppnFleet } from '../support/ppn-fleet-cli';
import { TestHost } from '../support/netns';
import { NodeMesh, emptied } from '../support/node-mesh';
import { killQemusUnder, liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * The first promise, with the built daemons and the Debian guest, each node an agent in
 * a network namespace of its own: a VM copied to the other node every 30 s; a file written and
 * synced in the guest; the next copy taken; then its node killed whole (every process of its
 * namespace, its agent and QEMU, at once; its disk folder deleted) and, with no backup
 * anywhere, `ppn-fleet vm restore <vm_id> --to <the peer>` brings it back from the copy alone:
 * over SSH the file, the same host key, the VM's id and its published ports. The controller's
 * monotonic clock is jumped past the 30 s silence (monotonic-clock-jump.cjs).
 */
jest.setTimeout(2 * GUEST_SSH_DEADLINE_MS + 600_000);

const JUMP = join(__dirname, '../support/monotonic-clock-jump.cjs');
const SECRET = 'copy-restore-node-secret-0123456789abcdef';
const SOURCE = 'copied-a';
const PEER = 'copied-b';
const WEB_PORT = 48_180;
const COPY_WAIT_MS = 240_000;
const workDir = scratchFolder('vm-copy-restore-');
const key = join(workDir, 'id_ed25519');

interface ListedVm {
  vm_id: string;
  node_id: string;
  state: string;
  host_ports: Array<{ host_port: number; guest_port: number; protocol: string }>;
  copied_at?: string | null;
  copy_node_id?: string | null;
  node_silent_since?: string;
}

function startNode(nodeId: string, host: TestHost, pubkey: string): Promise<Daemon> {
  return enrolled(
    startAgent(
      {
        VM_FLEET_ENDPOINT: `http://${host.hostAddress}:9203`,
        VM_NODE_ID: nodeId,
        VM_WG_IP: host.address,
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: join(workDir, nodeId),
        VM_BASE_IMAGE: guestImagePath(),
        VM_SSH_PUBKEY: pubkey,
        VM_FLEET_NODE_TOKEN: deriveNodeToken(SECRET, nodeId),
        VM_COPY_MAX_MBPS: '0',
      },
      [],
      host.name,
    ),
  );
}

const listed = async (vmId: string): Promise<ListedVm | undefined> =>
  (await getJson<ListedVm[]>('/v1/vms')).find(({ vm_id }) => vm_id === vmId);

describe("a dead node's VM restored from its copy on the other node", () => {
  let fleet: Daemon;
  let pubkey: string;
  let mesh: NodeMesh | undefined;

  beforeAll(async () => {
    if (!existsSync(guestImagePath())) {
      throw new Error(`no guest image ${guestImagePath()}: ${guestImageBuildCommand()}`);
    }
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'copy-restore', '-f', key]);
    pubkey = readFileSync(`${key}.pub`, 'utf8').trim();
    mesh = NodeMesh.create(['ppn-copy-a', 'ppn-copy-b'], 71);
    fleet = startFleetDaemon(
      { VM_FLEET_NODE_SECRET: SECRET, MONOTONIC_JUMP_MS: String(NODE_STALE_AFTER_MS + 2_000) },
      ['--require', JUMP],
    );
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
  });

  afterAll(async () => {
    await stopAllDaemons();
    mesh?.remove();
    killQemusUnder(workDir);
  });

  it('brings it back with the file synced before the last copy, its host key, id and ports', async () => {
    const [sourceHost, peerHost] = mesh!.hosts;
    const source = await startNode(SOURCE, sourceHost, pubkey);
    const peer = await startNode(PEER, peerHost, pubkey);
    const createdAt = Date.now();
    const created = await ppnFleet([
      'vm',
      'create',
      '--type',
      'copied',
      '--ram',
      '512',
      '--vcpus',
      '1',
      '--node',
      SOURCE,
      '--port',
      `${WEB_PORT}:80`,
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
        const vm = await listed(vmId);
        return vm?.state === 'Running' && vm.host_ports.length > 0 ? vm : undefined;
      },
      60_000,
      250,
    );
    const sshPort = before.host_ports[0].host_port;
    const probe = 'sha256sum ~/kept && cat /etc/ssh/ssh_host_ed25519_key.pub && hostname';
    const guestA = await sshOnceUp(
      key,
      sourceHost.address,
      sshPort,
      `head -c 1048576 /dev/urandom > ~/kept && sync && ${probe}`,
      {
        since: createdAt,
        deadlineMs: GUEST_SSH_DEADLINE_MS,
        serialLog: join(workDir, SOURCE, 'run', vmId, 'serial.log'),
      },
    );
    expect(guestA).toContain(`copied-${vmId.slice(-8)}`);

    // One interval later: a copy whose point in time (taken_at, when it began) is after the
    // write, held by the peer, shown in the listing. A copy under way during the write is not.
    const writtenAt = Date.now();
    const copied = await eventually(
      'a copy taken after the write, listed',
      async () => {
        const vm = await listed(vmId);
        return vm?.copy_node_id === PEER && vm.copied_at && Date.parse(vm.copied_at) > writtenAt
          ? vm
          : undefined;
      },
      COPY_WAIT_MS,
      250,
    );
    expect(Date.parse(copied.copied_at!)).toBeGreaterThan(createdAt);
    const copies = await ppnFleet(['vm', 'copies', vmId]);
    expect(copies.code).toBe(0);
    expect(copies.stdout).toContain(PEER);

    // The source dies whole: every process of its namespace killed at once (its agent and the
    // VM's QEMU among them), its disk folder gone. No backup anywhere.
    const [qemu] = liveQemusUnder(join(workDir, SOURCE)).map(({ pid }) => pid);
    expect(sourceHost.killAll()).toEqual(expect.arrayContaining([source.process.pid, qemu]));
    await source.waitForExit(10_000);
    await emptied(sourceHost);
    rmSync(join(workDir, SOURCE), { recursive: true, force: true });
    fleet.process.kill('SIGUSR2');
    // The jump makes every node silent at once: the peer is live again at its next heartbeat.
    await eventually(
      'the source silent, the peer live',
      async () => {
        const live = (await getJson<Array<{ node_id: string }>>('/v1/nodes')).map(
          ({ node_id }) => node_id,
        );
        const silent = (await listed(vmId))?.node_silent_since !== undefined;
        return silent && live.includes(PEER) && !live.includes(SOURCE) ? true : undefined;
      },
      30_000,
      200,
    );

    const restoredAt = Date.now();
    const restored = await ppnFleet(['vm', 'restore', vmId, '--to', PEER], {}, 300_000);
    if (restored.code !== 0) {
      throw new Error(
        `vm restore exited ${restored.code}: ${restored.stderr}\npeer: ${peer.output.slice(-3000)}`,
      );
    }
    expect(restored.stdout).toContain(`${vmId} restored on node ${PEER}`);
    const after = await eventually(
      `${vmId} running on ${PEER}`,
      async () => {
        const vm = await listed(vmId);
        return vm?.node_id === PEER && vm.state === 'Running' ? vm : undefined;
      },
      120_000,
      500,
    );
    expect(after.host_ports).toEqual(before.host_ports);
    const guestB = await sshOnceUp(key, peerHost.address, sshPort, probe, {
      since: restoredAt,
      deadlineMs: GUEST_SSH_DEADLINE_MS,
      serialLog: join(workDir, PEER, 'run', vmId, 'serial.log'),
    });
    // The file synced before the copy, the host key and the hostname from its id: the same guest.
    expect(guestB).toBe(guestA);
  });
});
