import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
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
import { ppnFleet } from '../support/ppn-fleet-cli';
import { killQemusUnder, liveQemusUnder } from '../support/qemu-processes';
import { scratchFolder } from '../support/scratch-folders';

/**
 * Backups of a real guest (the Debian image) to VM_BACKUP_DIR with the built ppn-fleet: a full
 * copy then an incremental one; a copy cut midway (the agent killed while QEMU's job runs)
 * leaves the last good backup as it was and the next one is full; after a power cut the next
 * copy is full by itself; the chain's last file holds the same disk as the stopped VM.
 */
jest.setTimeout(2 * GUEST_SSH_DEADLINE_MS + 300_000);

const NODE_ID = 'backups-node';
const WG_IP = '127.0.0.1';
const workDir = scratchFolder('vm-backups-');
const diskDir = join(workDir, 'disks');
const backupDir = join(workDir, 'backups');
const key = join(workDir, 'id_ed25519');
const BACKUP_WAIT_MS = 180_000;

interface ListedVm {
  vm_id: string;
  state: string;
  host_ports: Array<{ host_port: number; guest_port: number }>;
}

interface Manifest {
  chain_id: string;
  vm_id: string;
  files: Array<{
    file: string;
    kind: string;
    backing: string | null;
    size_bytes: number;
    sha256: string;
  }>;
  create_request: { ram_mb: number };
}

function startNodeAgent(pubkey: string, env: NodeJS.ProcessEnv = {}): Promise<Daemon> {
  return enrolled(
    startAgent({
      VM_FLEET_ENDPOINT: FLEET_URL,
      VM_NODE_ID: NODE_ID,
      VM_WG_IP: WG_IP,
      VM_HEARTBEAT_INTERVAL_S: '1',
      VM_DISK_DIR: diskDir,
      VM_DISK_RETENTION_S: '0',
      VM_BASE_IMAGE: guestImagePath(),
      VM_SSH_PUBKEY: pubkey,
      VM_BACKUP_DIR: backupDir,
      // Only when asked: the test says when.
      VM_BACKUP_EVERY_S: '0',
      ...env,
    }),
  );
}

async function listed(vmId: string, state: string, timeoutMs = 30_000): Promise<ListedVm> {
  return eventually(
    `${vmId} listed ${state}`,
    async () =>
      (await getJson<ListedVm[]>('/v1/vms')).find((vm) => vm.vm_id === vmId && vm.state === state),
    timeoutMs,
    200,
  );
}

/** The VM's chains, oldest first. */
function chains(vmId: string): string[] {
  const dir = join(backupDir, vmId);
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

function manifestOf(vmId: string, chain: string): Manifest {
  return JSON.parse(
    readFileSync(join(backupDir, vmId, chain, 'manifest.json'), 'utf8'),
  ) as Manifest;
}

/** `ppn-fleet vm backup --wait`: the line saying what was taken. */
async function backUp(vmId: string): Promise<string> {
  const run = await ppnFleet(['vm', 'backup', vmId, '--wait'], {}, BACKUP_WAIT_MS);
  if (run.code !== 0) throw new Error(`vm backup exited ${run.code}: ${run.stderr}`);
  return run.stdout;
}

describe('backups of a real guest to VM_BACKUP_DIR', () => {
  let agent: Daemon;
  let pubkey: string;

  beforeAll(async () => {
    if (!existsSync(guestImagePath())) {
      throw new Error(
        `no guest image ${guestImagePath()}: npm run test:system builds it as root, or: ${guestImageBuildCommand()}`,
      );
    }
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'backups', '-f', key]);
    pubkey = readFileSync(`${key}.pub`, 'utf8').trim();
    // The USB disk, mounted: the agent never makes VM_BACKUP_DIR itself.
    mkdirSync(backupDir, { mode: 0o700 });
    await listeningFleetDaemon();
    agent = await startNodeAgent(pubkey);
  });

  afterAll(async () => {
    await stopAllDaemons();
    killQemusUnder(workDir);
  });

  it('takes full then incremental copies, keeps the last good one through a cut copy and a power cut, and its chain reads as the stopped disk', async () => {
    const createdAt = Date.now();
    const created = await ppnFleet([
      'vm',
      'create',
      '--type',
      'bk',
      '--ram',
      '512',
      '--vcpus',
      '1',
      '--json',
    ]);
    expect(created.code).toBe(0);
    const vmId = (JSON.parse(created.stdout) as { vm_id: string }).vm_id;
    const vm = await listed(vmId, 'Running');
    const sshPort = vm.host_ports.find(({ guest_port }) => guest_port === 22)!.host_port;
    const serialLog = join(diskDir, 'run', vmId, 'serial.log');
    const ssh = (command: string): Promise<string> => sshRun(key, WG_IP, sshPort, command);
    const write = (name: string): string =>
      `head -c 4194304 /dev/urandom > ~/${name} && sync && sha256sum ~/${name}`;

    // A full copy, then only what the guest wrote since.
    const a = await sshOnceUp(key, WG_IP, sshPort, write('a'), {
      since: createdAt,
      deadlineMs: GUEST_SSH_DEADLINE_MS,
      serialLog,
    });
    expect(await backUp(vmId)).toMatch(
      new RegExp(`^backing up ${vmId} on node ${NODE_ID}.*\n${vmId}: full backup \\S+/0000 taken`),
    );
    await ssh(write('b'));
    expect(await backUp(vmId)).toMatch(/: incremental backup \S+\/0001 taken/);
    const [first] = chains(vmId);
    const firstManifest = manifestOf(vmId, first);
    expect(firstManifest.files.map(({ file, kind, backing }) => [file, kind, backing])).toEqual([
      ['0000-full.qcow2', 'full', null],
      ['0001-incremental.qcow2', 'incremental', '0000-full.qcow2'],
    ]);
    expect(firstManifest.create_request.ram_mb).toBe(512);
    // The incremental holds what changed (4 MiB and the guest's own writes), not the disk again.
    expect(firstManifest.files[1].size_bytes).toBeLessThan(firstManifest.files[0].size_bytes / 4);
    for (const file of ['0000-full.qcow2', '0001-incremental.qcow2', 'manifest.json']) {
      expect({ file, mode: statSync(join(backupDir, vmId, first, file)).mode & 0o777 }).toEqual({
        file,
        mode: 0o600,
      });
    }
    expect(statSync(join(backupDir, vmId)).mode & 0o777).toBe(0o700);
    const copies = await ppnFleet(['vm', 'copies', vmId]);
    expect(copies.code).toBe(0);
    expect(copies.stdout).toMatch(
      new RegExp(
        `${first}/0001 +incremental .*${NODE_ID}:${join(backupDir, vmId, first)}/0001-incremental\\.qcow2`,
      ),
    );
    expect(copies.stdout).toMatch(new RegExp(`${first}/0000 +full `));

    // A copy cut midway: the agent killed while QEMU's job runs.
    expect((await agent.stop()).code).toBe(0);
    agent = await startNodeAgent(pubkey, { VM_HOST_FAILPOINT: 'during-copy' });
    await ssh(write('c'));
    expect((await ppnFleet(['vm', 'backup', vmId])).code).toBe(0);
    await agent.waitForExit(60_000);
    expect(agent.output).toContain(`failpoint during-copy reached for vm ${vmId}`);
    expect(readdirSync(join(backupDir, vmId, first)).sort()).toEqual([
      '0000-full.qcow2',
      '0001-incremental.qcow2',
      '0002.partial.qcow2',
      'manifest.json',
    ]);
    expect(manifestOf(vmId, first)).toEqual(firstManifest);
    execFileSync('qemu-img', [
      'check',
      '-q',
      join(backupDir, vmId, first, '0001-incremental.qcow2'),
    ]);

    // The next one completes, full: the cut job may have cleared the bitmap as it ended.
    agent = await startNodeAgent(pubkey);
    await listed(vmId, 'Running');
    expect(await backUp(vmId)).toMatch(/: full backup \S+\/0000 taken/);
    await agent.waitForOutput(
      new RegExp(`vm ${vmId}: asked backup taken: full .*\\(full: the last copy was cut short\\)`),
      5_000,
    );
    expect(readdirSync(join(backupDir, vmId, first)).sort()).toEqual([
      '0000-full.qcow2',
      '0001-incremental.qcow2',
      'manifest.json',
    ]);
    expect(manifestOf(vmId, first)).toEqual(firstManifest);

    // A power cut: agent and QEMU killed at once, the agent started again. The next copy is
    // full by itself: QEMU never stored the bitmap it was given.
    const [pid] = liveQemusUnder(workDir)
      .filter(({ args }) => args.includes(`guest=${vmId}`))
      .map((qemu) => qemu.pid);
    agent.process.kill('SIGKILL');
    process.kill(pid, 'SIGKILL');
    await agent.waitForExit();
    const cutAt = Date.now();
    agent = await startNodeAgent(pubkey);
    await listed(vmId, 'Running');
    const b = await sshOnceUp(key, WG_IP, sshPort, 'sha256sum ~/a', {
      since: cutAt,
      deadlineMs: GUEST_SSH_DEADLINE_MS,
      serialLog,
    });
    expect(b).toBe(a);
    expect(await backUp(vmId)).toMatch(/: full backup \S+\/0000 taken/);
    await agent.waitForOutput(
      new RegExp(`vm ${vmId}: asked backup taken: full .*\\(full: QEMU has no bitmap`),
      5_000,
    );
    const last = chains(vmId).at(-1)!;

    // The guest's file system frozen, so nothing changes after the last copy: the chain then
    // holds exactly the disk the stopped VM leaves.
    await ssh(`${write('d')} && sudo fsfreeze --freeze /`);
    expect(await backUp(vmId)).toMatch(new RegExp(`: incremental backup ${last}/0001 taken`));
    const stopped = await ppnFleet(['vm', 'stop', vmId, '--force', '--wait'], {}, 120_000);
    expect(stopped.code).toBe(0);
    const restored = join(workDir, 'restored.qcow2');
    execFileSync('qemu-img', [
      'convert',
      '-O',
      'qcow2',
      join(backupDir, vmId, last, '0001-incremental.qcow2'),
      restored,
    ]);
    const compared = execFileSync(
      'qemu-img',
      ['compare', join(diskDir, 'disks', `${vmId}.qcow2`), restored],
      {
        encoding: 'utf8',
      },
    );
    expect(compared.trim()).toBe('Images are identical.');

    expect((await fetch(`${FLEET_URL}/v1/vms/${vmId}`, { method: 'DELETE' })).status).toBe(204);
  });
});
