import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { NODE_STALE_AFTER_MS } from '@app/fleet-domain';
import {
  Daemon,
  enrolled,
  eventually,
  getJson,
  listedNodes,
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
 * A machine that dies for good, with the built daemons, two agents (each in a network namespace of
 * its own) and the Debian guest: a VM backed up to node A's VM_BACKUP_DIR, node A killed whole
 * (every process of its namespace, its agent and QEMU, at once; its disk folder gone), the backup
 * folder copied into node B's VM_BACKUP_DIR (a USB disk moved over), `ppn-fleet vm restore --to
 * node-b --from <backup_id>`: over SSH the file written and synced before the backup is there, the
 * host key, machine id and hostname (from the VM id) are the same, the published ports too. Then
 * node A comes back with its old files: its heartbeat answer says the VM is superseded, and its
 * agent stops it and sets its disk aside instead of running it. The controller's monotonic clock is
 * jumped past the 30 s silence (monotonic-clock-jump.cjs). Then the replica source: the chain
 * placed under node B's VM_DISK_DIR/replicas/<vm_id>/ (a replica is a chain in the backup format),
 * restored as a new VM beside the running original.
 */
jest.setTimeout(2 * GUEST_SSH_DEADLINE_MS + 420_000);

const JUMP = join(__dirname, '../support/monotonic-clock-jump.cjs');
const workDir = scratchFolder('vm-restore-');
const key = join(workDir, 'id_ed25519');
const WEB_PORT = 48_080;
const WAIT_MS = 300_000;

interface ListedVm {
  vm_id: string;
  node_id: string;
  state: string;
  host_ports: Array<{ host_port: number; guest_port: number; protocol: string }>;
  node_silent_since?: string;
}

const node = (id: 'a' | 'b') => ({
  id: `node-${id}`,
  diskDir: join(workDir, `${id}-disks`),
  backupDir: join(workDir, `${id}-backups`),
  /** Its machine: a network namespace of its own (beforeAll). */
  host: undefined as unknown as TestHost,
});
const A = node('a');
const B = node('b');

function startNode(which: typeof A, pubkey: string): Promise<Daemon> {
  return enrolled(
    startAgent(
      {
        VM_FLEET_ENDPOINT: `http://${which.host.hostAddress}:9203`,
        VM_NODE_ID: which.id,
        VM_WG_IP: which.host.address,
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: which.diskDir,
        VM_BASE_IMAGE: guestImagePath(),
        VM_SSH_PUBKEY: pubkey,
        VM_BACKUP_DIR: which.backupDir,
        VM_BACKUP_EVERY_S: '0',
      },
      [],
      which.host.name,
    ),
  );
}

async function listedOn(vmId: string, nodeId: string, state: string): Promise<ListedVm> {
  return eventually(
    `${vmId} listed ${state} on ${nodeId}`,
    async () =>
      (await getJson<ListedVm[]>('/v1/vms')).find(
        (vm) => vm.vm_id === vmId && vm.node_id === nodeId && vm.state === state,
      ),
    WAIT_MS,
    500,
  );
}

describe("restore anywhere: a dead node's VM from a backup folder moved to another node", () => {
  let fleet: Daemon;
  let pubkey: string;
  let mesh: NodeMesh | undefined;
  /** What the first test leaves for the second: the VM, now on node B, and its guest's answers. */
  let first: { vmId: string; kept: string } | undefined;

  beforeAll(async () => {
    if (!existsSync(guestImagePath())) {
      throw new Error(
        `no guest image ${guestImagePath()}: npm run test:system builds it as root, or: ${guestImageBuildCommand()}`,
      );
    }
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'restore', '-f', key]);
    pubkey = readFileSync(`${key}.pub`, 'utf8').trim();
    for (const which of [A, B]) mkdirSync(which.backupDir, { mode: 0o700 });
    mesh = NodeMesh.create(['ppn-restore-a', 'ppn-restore-b'], 77);
    [A.host, B.host] = mesh.hosts;
    fleet = startFleetDaemon({ MONOTONIC_JUMP_MS: String(NODE_STALE_AFTER_MS + 2_000) }, [
      '--require',
      JUMP,
    ]);
    await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
  });

  afterAll(async () => {
    await stopAllDaemons();
    mesh?.remove();
    killQemusUnder(workDir);
  });

  it('brings the VM back on node B with its data, host key, id and ports; node A, back, sets its stale copy aside', async () => {
    let agentA = await startNode(A, pubkey);
    const agentB = await startNode(B, pubkey);

    // The VM on node A, with a published port, a file written and synced, then a backup.
    const createdAt = Date.now();
    const created = await ppnFleet([
      'vm',
      'create',
      '--type',
      'restored',
      '--ram',
      '512',
      '--vcpus',
      '1',
      '--node',
      A.id,
      '--port',
      `${WEB_PORT}:80`,
      '--json',
    ]);
    expect(created.code).toBe(0);
    const vmId = (JSON.parse(created.stdout) as { vm_id: string }).vm_id;
    const before = await listedOn(vmId, A.id, 'Running');
    const sshPort = before.host_ports[0].host_port;
    const probe =
      'sha256sum ~/kept && cat /etc/ssh/ssh_host_ed25519_key.pub && cat /etc/machine-id && hostname';
    const guestA = await sshOnceUp(
      key,
      A.host.address,
      sshPort,
      `head -c 1048576 /dev/urandom > ~/kept && sync && ${probe}`,
      {
        since: createdAt,
        deadlineMs: GUEST_SSH_DEADLINE_MS,
        serialLog: join(A.diskDir, 'run', vmId, 'serial.log'),
      },
    );
    // The hostname the agent's seed gives it from its id: <vm_type>-<last 8 of vm_id>.
    expect(guestA).toContain(`restored-${vmId.slice(-8)}`);
    const backup = await ppnFleet(['vm', 'backup', vmId, '--wait'], {}, WAIT_MS);
    expect(backup.code).toBe(0);
    const backupId = new RegExp(`${vmId}: full backup (\\S+/0000) taken`).exec(backup.stdout)?.[1];
    expect(backupId).toBeDefined();

    // Node A dies whole: every process of its namespace killed at once (its agent and the VM's
    // QEMU among them), its disk folder gone. Its USB disk goes to B.
    const [qemuA] = liveQemusUnder(A.diskDir).map(({ pid }) => pid);
    expect(A.host.killAll()).toEqual(expect.arrayContaining([agentA.process.pid, qemuA]));
    await agentA.waitForExit(10_000);
    await emptied(A.host);
    const away = `${A.diskDir}.away`;
    renameSync(A.diskDir, away);
    execFileSync('cp', ['-a', join(A.backupDir, vmId), join(B.backupDir, vmId)]);
    fleet.process.kill('SIGUSR2');
    await eventually(
      'node A silent, node B live',
      async () => {
        const live = (await listedNodes()).map(({ node_id }) => node_id);
        const vm = (await getJson<ListedVm[]>('/v1/vms')).find(({ vm_id }) => vm_id === vmId);
        return !live.includes(A.id) && live.includes(B.id) && vm?.node_silent_since
          ? true
          : undefined;
      },
      30_000,
      200,
    );

    const restoredAt = Date.now();
    const restored = await ppnFleet(
      ['vm', 'restore', vmId, '--to', B.id, '--from', backupId!],
      {},
      WAIT_MS,
    );
    if (restored.code !== 0) {
      throw new Error(
        `vm restore exited ${restored.code}: ${restored.stderr}\nnode B: ${agentB.output.slice(-3000)}\ncontroller: ${fleet.output.slice(-3000)}`,
      );
    }
    expect(restored.stdout).toContain(`${vmId} restored on node ${B.id} from backup ${backupId}`);
    expect(restored.stdout).toContain(
      `ports: ${B.host.address}:${sshPort} → 22/tcp, ${B.host.address}:${WEB_PORT} → 80/tcp`,
    );
    const after = await listedOn(vmId, B.id, 'Running');
    expect(after.host_ports).toEqual(before.host_ports);
    expect(
      (await getJson<ListedVm[]>('/v1/vms')).filter(({ vm_id }) => vm_id === vmId),
    ).toHaveLength(1);
    const guestB = await sshOnceUp(key, B.host.address, sshPort, probe, {
      since: restoredAt,
      deadlineMs: GUEST_SSH_DEADLINE_MS,
      serialLog: join(B.diskDir, 'run', vmId, 'serial.log'),
    });
    // The file, the host key, the machine id and the hostname made from its id: the same guest.
    expect(guestB).toBe(guestA);
    expect(statSync(join(B.diskDir, 'disks', `${vmId}.qcow2`)).mode & 0o777).toBe(0o600);

    // Node A comes back with its old files: told its copy is superseded, it never runs it.
    renameSync(away, A.diskDir);
    agentA = await startNode(A, pubkey);
    await agentA.waitForOutput(new RegExp(`vm ${vmId}: superseded`), 60_000);
    await eventually(
      'no QEMU of the VM under node A',
      () => Promise.resolve(liveQemusUnder(A.diskDir).length === 0 ? true : undefined),
      30_000,
      200,
    );
    const aside = readdirSync(join(A.diskDir, 'superseded'));
    expect(aside).toEqual([expect.stringMatching(new RegExp(`^${vmId}-\\d{8}T\\d{6}Z$`))]);
    expect(existsSync(join(A.diskDir, 'superseded', aside[0], `${vmId}.qcow2`))).toBe(true);
    expect(statSync(join(A.diskDir, 'superseded', aside[0])).mode & 0o777).toBe(0o700);
    expect(existsSync(join(A.diskDir, 'run', vmId))).toBe(false);
    const listed = (await getJson<ListedVm[]>('/v1/vms')).filter(({ vm_id }) => vm_id === vmId);
    expect(listed.map(({ node_id, state }) => [node_id, state])).toEqual([[B.id, 'Running']]);
    // The restored guest is untouched.
    expect(
      await sshOnceUp(key, B.host.address, sshPort, 'sha256sum ~/kept', {
        since: Date.now(),
        deadlineMs: 30_000,
        serialLog: join(B.diskDir, 'run', vmId, 'serial.log'),
      }),
    ).toBe(guestA.split('\n')[0] + '\n');
    first = { vmId, kept: guestA.split('\n')[0] };
  });

  it('restores from a copy a node holds as a peer (a chain under VM_DISK_DIR/replicas/), as a new VM beside the running one', async () => {
    if (!first) throw new Error('the first test did not get this far');
    const { vmId, kept } = first;
    // A replica is a chain folder in the backup format: this one is the backup's own chain.
    const [chainId] = readdirSync(join(B.backupDir, vmId));
    mkdirSync(join(B.diskDir, 'replicas', vmId), { recursive: true, mode: 0o700 });
    execFileSync('cp', [
      '-a',
      join(B.backupDir, vmId, chainId),
      join(B.diskDir, 'replicas', vmId, chainId),
    ]);
    // Still running on node B: refused, unless as a new VM.
    const refused = await ppnFleet(['vm', 'restore', vmId, '--to', B.id]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`vm ${vmId} still runs on node ${B.id}`);
    const restoredAt = Date.now();
    const restored = await ppnFleet(['vm', 'restore', vmId, '--to', B.id, '--as-new'], {}, WAIT_MS);
    if (restored.code !== 0)
      throw new Error(`vm restore --as-new exited ${restored.code}: ${restored.stderr}`);
    const newId = new RegExp(
      `^(vm-[0-9a-f]{16}) \\(a new VM from ${vmId}\\) restored on node ${B.id} from replica ${chainId}/0000`,
    ).exec(restored.stdout)?.[1];
    expect(newId).toBeDefined();
    const copy = await listedOn(newId!, B.id, 'Running');
    const original = await listedOn(vmId, B.id, 'Running');
    // New host ports: the original keeps its own.
    expect(copy.host_ports.map(({ host_port }) => host_port)).not.toContain(
      original.host_ports[0].host_port,
    );
    const answered = await sshOnceUp(
      key,
      B.host.address,
      copy.host_ports[0].host_port,
      'sha256sum ~/kept && hostname',
      {
        since: restoredAt,
        deadlineMs: GUEST_SSH_DEADLINE_MS,
        serialLog: join(B.diskDir, 'run', newId!, 'serial.log'),
      },
    );
    expect(answered).toBe(`${kept}\nrestored-${newId!.slice(-8)}\n`);
  });
});
