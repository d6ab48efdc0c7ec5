import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
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
  stopAllDaemons,
} from '../support/daemons';
import { guestImageBuildCommand, guestImagePath } from '../support/guest-image';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp } from '../support/guest-ssh';
import { ppnFleet } from '../support/ppn-fleet-cli';
import { killQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * Restore onto a node that does not hold the copy, with the built daemons, three agents (the
 * source, the peer the controller chose to hold its copy, and a third node) and the Debian
 * guest: a VM copied every 30 s; a file written and synced in the guest; the next copy taken;
 * its node killed whole; then `ppn-fleet vm restore <vm_id> --to <the third node>`: that node's
 * agent pulls the copy from the holder (a read grant, the holder's read route), checks it and
 * boots it: over SSH the file, the same host key, the VM's id and its published ports; nothing
 * of the pull is left in its staging folder. The controller's monotonic clock is jumped past
 * the 30 s silence (monotonic-clock-jump.cjs).
 */
jest.setTimeout(2 * GUEST_SSH_DEADLINE_MS + 600_000);

const JUMP = join(__dirname, '../support/monotonic-clock-jump.cjs');
const SECRET = 'copy-restore-node-secret-0123456789abcdef';
const SOURCE = { id: 'pulled-a', ip: '127.0.0.61' };
const NODES = [
  { id: 'pulled-b', ip: '127.0.0.62' },
  { id: 'pulled-c', ip: '127.0.0.63' },
];
const WEB_PORT = 48_280;
const COPY_WAIT_MS = 240_000;
const workDir = scratchFolder('vm-restore-pull-');
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

function startNode(node: typeof SOURCE, pubkey: string): Promise<Daemon> {
  return enrolled(
    startAgent({
      VM_FLEET_ENDPOINT: FLEET_URL,
      VM_NODE_ID: node.id,
      VM_WG_IP: node.ip,
      VM_HEARTBEAT_INTERVAL_S: '1',
      VM_DISK_DIR: join(workDir, node.id),
      VM_BASE_IMAGE: guestImagePath(),
      VM_SSH_PUBKEY: pubkey,
      VM_FLEET_NODE_TOKEN: deriveNodeToken(SECRET, node.id),
      VM_COPY_MAX_MBPS: '0',
    }),
  );
}

const listed = async (vmId: string): Promise<ListedVm | undefined> =>
  (await getJson<ListedVm[]>('/v1/vms')).find(({ vm_id }) => vm_id === vmId);

describe("a dead node's VM restored on a node that does not hold its copy", () => {
  let fleet: Daemon;
  let pubkey: string;

  beforeAll(async () => {
    if (!existsSync(guestImagePath())) {
      throw new Error(`no guest image ${guestImagePath()}: ${guestImageBuildCommand()}`);
    }
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'copy-restore', '-f', key]);
    pubkey = readFileSync(`${key}.pub`, 'utf8').trim();
    fleet = startFleetDaemon(
      { VM_FLEET_NODE_SECRET: SECRET, MONOTONIC_JUMP_MS: String(NODE_STALE_AFTER_MS + 2_000) },
      ['--require', JUMP],
    );
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
  });

  afterAll(async () => {
    await stopAllDaemons();
    killQemusUnder(workDir);
  });

  it('pulls the copy from its holder and boots it: the file synced before the last copy, host key, id and ports', async () => {
    const source = await startNode(SOURCE, pubkey);
    const others = [await startNode(NODES[0], pubkey), await startNode(NODES[1], pubkey)];
    const createdAt = Date.now();
    const created = await ppnFleet([
      'vm',
      'create',
      '--type',
      'pulled',
      '--ram',
      '512',
      '--vcpus',
      '1',
      '--node',
      SOURCE.id,
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
      SOURCE.ip,
      sshPort,
      `head -c 1048576 /dev/urandom > ~/kept && sync && ${probe}`,
      {
        since: createdAt,
        deadlineMs: GUEST_SSH_DEADLINE_MS,
        serialLog: join(workDir, SOURCE.id, 'run', vmId, 'serial.log'),
      },
    );
    expect(guestA).toContain(`pulled-${vmId.slice(-8)}`);

    // One interval later: a copy whose point in time (taken_at, when it began) is after the
    // write, held by the peer, shown in the listing. A copy under way during the write is not.
    const writtenAt = Date.now();
    const copied = await eventually(
      'a copy taken after the write, listed',
      async () => {
        const vm = await listed(vmId);
        return vm?.copy_node_id && vm.copied_at && Date.parse(vm.copied_at) > writtenAt
          ? vm
          : undefined;
      },
      COPY_WAIT_MS,
      250,
    );
    expect(Date.parse(copied.copied_at!)).toBeGreaterThan(createdAt);
    // The holder is the peer the controller chose; the VM is restored on the other node.
    const holderAt = NODES.findIndex(({ id }) => id === copied.copy_node_id);
    expect(holderAt).toBeGreaterThanOrEqual(0);
    const HOLDER = NODES[holderAt];
    const TARGET = NODES[1 - holderAt];
    const target = others[1 - holderAt];

    // The source dies whole: agent and QEMU killed, its disk folder gone. No backup anywhere.
    source.process.kill('SIGKILL');
    await source.waitForExit(10_000);
    killQemusUnder(join(workDir, SOURCE.id));
    rmSync(join(workDir, SOURCE.id), { recursive: true, force: true });
    fleet.process.kill('SIGUSR2');
    // The jump makes every node silent at once: the peer is live again at its next heartbeat.
    await eventually(
      'the source silent, the peer live',
      async () => {
        const live = (await getJson<Array<{ node_id: string }>>('/v1/nodes')).map(
          ({ node_id }) => node_id,
        );
        const silent = (await listed(vmId))?.node_silent_since !== undefined;
        return silent &&
          live.includes(HOLDER.id) &&
          live.includes(TARGET.id) &&
          !live.includes(SOURCE.id)
          ? true
          : undefined;
      },
      30_000,
      200,
    );

    const restoredAt = Date.now();
    const restored = await ppnFleet(['vm', 'restore', vmId, '--to', TARGET.id], {}, 300_000);
    if (restored.code !== 0) {
      throw new Error(
        `vm restore exited ${restored.code}: ${restored.stderr}\ntarget: ${target.output.slice(-3000)}\nholder: ${others[holderAt].output.slice(-3000)}`,
      );
    }
    expect(restored.stdout).toContain(`${vmId} restored on node ${TARGET.id} from replica`);
    await target.waitForOutput(
      new RegExp(`vm ${vmId}: its copy \\S+ pulled from node ${HOLDER.id}`),
      10_000,
    );
    // The staging folder is empty once the disk is made.
    expect(readdirSync(join(workDir, TARGET.id, 'pulls'))).toEqual([]);
    const after = await eventually(
      `${vmId} running on ${TARGET.id}`,
      async () => {
        const vm = await listed(vmId);
        return vm?.node_id === TARGET.id && vm.state === 'Running' ? vm : undefined;
      },
      120_000,
      500,
    );
    expect(after.host_ports).toEqual(before.host_ports);
    const guestB = await sshOnceUp(key, TARGET.ip, sshPort, probe, {
      since: restoredAt,
      deadlineMs: GUEST_SSH_DEADLINE_MS,
      serialLog: join(workDir, TARGET.id, 'run', vmId, 'serial.log'),
    });
    // The file synced before the copy, the host key and the hostname from its id: the same guest.
    expect(guestB).toBe(guestA);
  });
});
