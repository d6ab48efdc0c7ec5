import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  Daemon,
  FLEET_URL,
  enrolled,
  eventually,
  getJson,
  listeningFleetDaemon,
  startAgent,
  stopAllDaemons,
} from '../support/daemons';
import { guestImageBuildCommand, guestImagePath } from '../support/guest-image';
import { GUEST_SSH_DEADLINE_MS, sshOnceUp, sshRun } from '../support/guest-ssh';
import { killQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * The peer's disk full: its VM_DISK_DIR a 96 MiB tmpfs, far smaller than a copy of the guest.
 * The copy is refused before anything is written (507, naming the VM and the room), the source
 * says so in its log and tries again at the next interval, and its VM keeps running untouched.
 */
jest.setTimeout(GUEST_SSH_DEADLINE_MS + 300_000);

const SOURCE = 'roomy-a';
const PEER = 'full-b';
const SOURCE_IP = '127.0.0.61';
const PEER_IP = '127.0.0.62';
const workDir = scratchFolder('vm-replicas-full-');
const peerDisks = join(workDir, PEER);
const key = join(workDir, 'id_ed25519');

describe("a peer whose disk has no room for a VM's copy", () => {
  let source: Daemon;
  let pubkey: string;

  beforeAll(async () => {
    if (!existsSync(guestImagePath())) {
      throw new Error(`no guest image ${guestImagePath()}: ${guestImageBuildCommand()}`);
    }
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'full', '-f', key]);
    pubkey = readFileSync(`${key}.pub`, 'utf8').trim();
    mkdirSync(peerDisks, { mode: 0o700 });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=96m,mode=0700', 'tmpfs', peerDisks]);
    await listeningFleetDaemon();
    const common = {
      VM_FLEET_ENDPOINT: FLEET_URL,
      VM_HEARTBEAT_INTERVAL_S: '1',
      VM_DISK_RETENTION_S: '0',
      VM_SSH_PUBKEY: pubkey,
      VM_ACCEL: 'auto',
    };
    await enrolled(
      startAgent({ ...common, VM_NODE_ID: PEER, VM_WG_IP: PEER_IP, VM_DISK_DIR: peerDisks }),
    );
    source = await enrolled(
      startAgent({
        ...common,
        VM_NODE_ID: SOURCE,
        VM_WG_IP: SOURCE_IP,
        VM_DISK_DIR: join(workDir, SOURCE),
        VM_BASE_IMAGE: guestImagePath(),
      }),
    );
  });

  afterAll(async () => {
    await stopAllDaemons();
    killQemusUnder(workDir);
    execFileSync('umount', ['-l', peerDisks]);
  });

  it('refuses the copy with a clear error on the source, which keeps its VM running', async () => {
    const createdAt = Date.now();
    const response = await fetch(`${FLEET_URL}/v1/vms`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        vm_type: 'full',
        ram_mb: 512,
        vcpu_count: 1,
        preferred_node: SOURCE,
        copies: { count: 1, every_s: 30 },
      }),
    });
    expect(response.status).toBe(201);
    const vmId = ((await response.json()) as { vm_id: string }).vm_id;
    const failed = new RegExp(
      `vm ${vmId}: copy to node ${PEER} failed: node ${PEER} answered POST /v1/replicas/${vmId}/transfers with 507: no room for vm ${vmId}'s copy on this node: [\\d.]+ MB to receive, [\\d.]+ MB free in VM_DISK_DIR beyond its reserve \\(tried again in 30 s\\)`,
    );
    await source.waitForOutput(failed, 240_000);
    // Nothing of it written on the peer.
    const replicas = join(peerDisks, 'replicas');
    expect(existsSync(replicas) ? readdirSync(replicas) : []).toEqual([]);

    // The VM runs on, untouched: listed Running, reachable, writing.
    const listed = await getJson<
      Array<{
        vm_id: string;
        state: string;
        host_ports: Array<{ host_port: number; guest_port: number }>;
      }>
    >('/v1/vms');
    const vm = listed.find(({ vm_id }) => vm_id === vmId)!;
    expect(vm.state).toBe('Running');
    const port = vm.host_ports.find(({ guest_port }) => guest_port === 22)!.host_port;
    await sshOnceUp(key, SOURCE_IP, port, 'true', {
      since: createdAt,
      deadlineMs: GUEST_SSH_DEADLINE_MS,
      serialLog: join(workDir, SOURCE, 'run', vmId, 'serial.log'),
    });
    expect(await sshRun(key, SOURCE_IP, port, 'echo written > ~/f && sync && cat ~/f')).toContain(
      'written',
    );
    // Tried again at the next interval, refused again the same way.
    const from = source.output.search(failed) + 1;
    await eventually(
      'a second refusal',
      () => Promise.resolve(failed.exec(source.output.slice(from)) ?? undefined),
      90_000,
      500,
    );
  });
});
