import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { vmHostConfig } from '../../../../../test/support/configs';
import {
  VmBed,
  closeVmBed,
  openVmBed,
  vmStateParts,
} from '../../../../../test/support/vm-services';
import { PRIVATE_FILE_MODE } from '../files/vm-files';
import { VmNotOnNodeError } from '../vms.errors';
import type { BackupManifest } from './backup-folder';
import { VmCopier } from './vm-copier';
import { VmBackupRefusedError } from './vm-backups.errors';
import { BackupOutcome, MAX_CHAIN_FILES, VmBackupsService } from './vm-backups.service';

const VM = 'vm-00000000000000b1';
const HOUR = 3_600_000;

/**
 * Copies as files of text naming what was copied; a test makes the next copy full (`fullBecause`),
 * fail halfway (`failWith`: its file half written) or fail its check.
 */
class FakeCopier extends VmCopier {
  convert(): Promise<void> {
    return Promise.reject(new Error('not used by backups'));
  }

  fullBecause: string | null = null;
  failWith?: Error;
  checkFails = false;
  readonly asked: string[] = [];
  private written = 0;

  prepareRunning(_vmId: string, bitmap: string | null): Promise<string | null> {
    this.asked.push(`prepare ${bitmap}`);
    return Promise.resolve(bitmap === null ? 'no chain to add to' : this.fullBecause);
  }

  copyRunningFull(_vmId: string, target: string, bitmap: string): Promise<void> {
    this.asked.push(`full ${bitmap}`);
    return this.write(target, `full ${bitmap}`);
  }

  copyRunningIncremental(
    _vmId: string,
    target: string,
    backing: string,
    bitmap: string,
  ): Promise<void> {
    this.asked.push(`incremental on ${backing} ${bitmap}`);
    return this.write(target, `incremental ${bitmap}`);
  }

  copyStopped(_vmId: string, target: string, bitmap: string): Promise<void> {
    this.asked.push(`stopped ${bitmap}`);
    return this.write(target, `stopped ${bitmap}`);
  }

  check(_file: string): Promise<void> {
    return this.checkFails
      ? Promise.reject(new Error('qemu-img failed: corrupt'))
      : Promise.resolve();
  }

  describe(): Promise<{ tool: string; virtualSizeBytes: number | null }> {
    return Promise.resolve({ tool: 'qemu-img version 7.2.22', virtualSizeBytes: 4096 });
  }

  private async write(target: string, text: string): Promise<void> {
    await writeFile(target, `${text} #${++this.written}`, { mode: PRIVATE_FILE_MODE });
    if (this.failWith) throw this.failWith;
  }
}

describe('VmBackupsService: chains of copies in VM_BACKUP_DIR', () => {
  let bed: VmBed;
  let backupDir: string;
  let copier: FakeCopier;
  let backups: VmBackupsService;

  function service(env: Record<string, string> = {}): VmBackupsService {
    const config = vmHostConfig({ VM_NODE_ID: 'node-a', VM_BACKUP_DIR: backupDir, ...env });
    const { sidecars, lifecycle } = vmStateParts({ ...bed, config });
    return new VmBackupsService(config, bed.files, sidecars, lifecycle, copier, bed.clock);
  }

  beforeEach(async () => {
    bed = await openVmBed('vm-backups-');
    backupDir = await mkdtemp(join(tmpdir(), 'vm-backup-dir-'));
    copier = new FakeCopier();
    await bed.leftBehind(VM, {
      started_at: '2026-08-06T11:00:00.000Z',
      tenant_id: 'acme',
      forwards: [
        { host_port: 40022, guest_port: 22, protocol: 'tcp' },
        { host_port: 40080, guest_port: 80, protocol: 'tcp' },
      ],
      disk_gb: 20,
      idempotency_key: 'a'.repeat(64) + '.' + 'b'.repeat(64),
    });
    await writeFile(bed.files.disk(VM), 'disk');
    backups = service();
  });

  afterEach(async () => {
    await closeVmBed(bed);
    await rm(backupDir, { recursive: true, force: true });
  });

  const chains = async (): Promise<string[]> => (await readdir(join(backupDir, VM))).sort();
  const manifestOf = async (chain: string): Promise<BackupManifest> =>
    JSON.parse(
      await readFile(join(backupDir, VM, chain, 'manifest.json'), 'utf8'),
    ) as BackupManifest;
  const taken = (outcome: BackupOutcome) => {
    if (!('taken' in outcome)) throw new Error(`skipped: ${outcome.skipped}`);
    return outcome;
  };

  it('refuses, at start, a VM_BACKUP_DIR in VM_DISK_DIR, naming both', () => {
    const diskDir = vmHostConfig({}).diskDir;
    for (const inside of [diskDir, join(diskDir, 'backups')]) {
      expect(() => service({ VM_BACKUP_DIR: inside })).toThrow(
        `VM_BACKUP_DIR ${inside} is in VM_DISK_DIR ${diskDir}`,
      );
    }
    expect(() => service({ VM_BACKUP_DIR: `${diskDir}-backups` })).not.toThrow();
  });

  it('takes a full copy first, then incrementals backed by the one before, in one chain with its manifest', async () => {
    const first = taken(await backups.backUpNow(VM));
    bed.clock.advance(HOUR);
    const second = taken(await backups.backUpNow(VM));

    expect(first.taken.kind).toBe('full');
    expect(second).toMatchObject({ chainId: first.chainId, fullBecause: null });
    expect(second.taken).toMatchObject({ kind: 'incremental', backing: '0000-full.qcow2' });
    expect(copier.asked).toEqual([
      'prepare null',
      `full ppn-copy-${first.chainId}`,
      `prepare ppn-copy-${first.chainId}`,
      `incremental on 0000-full.qcow2 ppn-copy-${first.chainId}`,
    ]);
    expect(await chains()).toEqual([first.chainId]);
    const dir = join(backupDir, VM, first.chainId);
    expect((await readdir(dir)).sort()).toEqual([
      '0000-full.qcow2',
      '0001-incremental.qcow2',
      'manifest.json',
    ]);
    const manifest = await manifestOf(first.chainId);
    const content = await readFile(join(dir, '0001-incremental.qcow2'));
    expect(manifest).toMatchObject({
      format: 'ppn-fleet-backup/1',
      vm_id: VM,
      node_id: 'node-a',
      chain_id: first.chainId,
      vm: { vm_id: VM, tenant_id: 'acme', ram_alloc_mb: 1_024 },
      create_request: {
        vm_type: 'web',
        ram_mb: 1_024,
        vcpu_count: 2,
        tenant_id: 'acme',
        ports: [{ guest_port: 80, protocol: 'tcp' }],
        disk_gb: 20,
      },
      hypervisor: { qemu_img: 'qemu-img version 7.2.22', machine: 'q35' },
      restore: expect.stringContaining(
        `qemu-img convert -O qcow2 0001-incremental.qcow2 ${VM}.qcow2`,
      ),
    });
    // What only this node's agent needs stays out: its process, the create's key.
    expect(Object.keys(manifest.vm as object)).not.toEqual(
      expect.arrayContaining(['idempotency_key']),
    );
    expect(Object.keys(manifest.vm as object)).not.toEqual(expect.arrayContaining(['driver']));
    expect(
      manifest.files.map(({ file, kind, backing, vm_state }) => [file, kind, backing, vm_state]),
    ).toEqual([
      ['0000-full.qcow2', 'full', null, 'running'],
      ['0001-incremental.qcow2', 'incremental', '0000-full.qcow2', 'running'],
    ]);
    expect(manifest.files[1]).toMatchObject({
      taken_at: '2026-08-06T13:00:00.000Z',
      size_bytes: content.length,
      sha256: createHash('sha256').update(content).digest('hex'),
    });
    // Private: the VM's disk is in there.
    expect((await stat(join(backupDir, VM))).mode & 0o777).toBe(0o700);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    for (const name of await readdir(dir)) {
      expect({ name, mode: (await stat(join(dir, name))).mode & 0o777 }).toEqual({
        name,
        mode: 0o600,
      });
    }
    expect(
      (await backups.list(VM)).backups.map(({ backup_id, kind }) => [backup_id, kind]),
    ).toEqual([
      [`${first.chainId}/0001`, 'incremental'],
      [`${first.chainId}/0000`, 'full'],
    ]);
  });

  it('starts a new full chain by itself when the copier says the bitmap cannot be trusted (a crash, a power cut)', async () => {
    const first = taken(await backups.backUpNow(VM));
    copier.fullBecause = 'bitmap ppn-copy-x is inconsistent (QEMU ended uncleanly)';
    bed.clock.advance(HOUR);
    const second = taken(await backups.backUpNow(VM));
    expect(second.taken.kind).toBe('full');
    expect(second.chainId).not.toBe(first.chainId);
    expect(second.fullBecause).toMatch(/inconsistent/);
    expect(bed.logs).toContainEqual(
      expect.stringMatching(
        /^log vm .*: asked backup taken: full .*\(full: bitmap ppn-copy-x is inconsistent/,
      ),
    );
  });

  it('leaves the last good backup untouched when a copy fails midway, and the next one completes', async () => {
    const first = taken(await backups.backUpNow(VM));
    const dir = join(backupDir, VM, first.chainId);
    const before = await readFile(join(dir, 'manifest.json'), 'utf8');
    const fullBefore = await readFile(join(dir, '0000-full.qcow2'));

    copier.failWith = new Error("QEMU's copy job failed: No space left on device");
    bed.clock.advance(HOUR);
    await expect(backups.backUpNow(VM)).rejects.toThrow('No space left on device');
    expect((await readdir(dir)).sort()).toEqual(['0000-full.qcow2', 'manifest.json']);
    expect(await readFile(join(dir, 'manifest.json'), 'utf8')).toBe(before);
    expect(await readFile(join(dir, '0000-full.qcow2'))).toEqual(fullBefore);
    expect(await backups.list(VM)).toMatchObject({
      in_progress_since: null,
      last_error: "QEMU's copy job failed: No space left on device",
    });

    copier.failWith = undefined;
    const next = taken(await backups.backUpNow(VM));
    expect(next.taken).toMatchObject({ kind: 'incremental', file: '0001-incremental.qcow2' });
    expect((await backups.list(VM)).last_error).toBeNull();
  });

  it('takes nothing into the chain that fails its check', async () => {
    const first = taken(await backups.backUpNow(VM));
    copier.checkFails = true;
    await expect(backups.backUpNow(VM)).rejects.toThrow('qemu-img failed: corrupt');
    expect((await manifestOf(first.chainId)).files).toHaveLength(1);
    expect(await readdir(join(backupDir, VM, first.chainId))).not.toContain('0001.partial.qcow2');
  });

  it('removes a first copy cut short (no manifest) and a full one that failed', async () => {
    copier.failWith = new Error('cut');
    await expect(backups.backUpNow(VM)).rejects.toThrow('cut');
    expect(await chains()).toEqual([]);
  });

  it('starts a new full chain after an agent was killed during a copy (its file left in the chain)', async () => {
    const first = taken(await backups.backUpNow(VM));
    const dir = join(backupDir, VM, first.chainId);
    // What a killed agent leaves: the copy's file, never taken into the manifest.
    await writeFile(join(dir, '0001.partial.qcow2'), 'half');
    // And what is not ours stays.
    await writeFile(join(dir, 'NOTES.txt'), "the operator's");
    backups = service();
    bed.clock.advance(HOUR);
    const next = taken(await backups.backUpNow(VM));
    expect(next).toMatchObject({ fullBecause: 'the last copy was cut short' });
    expect(next.taken.kind).toBe('full');
    expect((await readdir(dir)).sort()).toEqual(['0000-full.qcow2', 'NOTES.txt', 'manifest.json']);
  });

  it("removes a first copy an agent's kill cut short (its folder holding only the copy's file)", async () => {
    const cut = join(backupDir, VM, '20260806T110000Z-abcd');
    await mkdir(join(backupDir, VM));
    await mkdir(cut);
    await writeFile(join(cut, '0000.partial.qcow2'), 'half');
    const next = taken(await backups.backUpNow(VM));
    expect(await chains()).toEqual([next.chainId]);
  });

  it('keeps a chain whose manifest cannot be read, and a folder that is not a copy cut short', async () => {
    const first = taken(await backups.backUpNow(VM));
    await writeFile(join(backupDir, VM, first.chainId, 'manifest.json'), '{ damaged');
    const foreign = join(backupDir, VM, '20260101T000000Z-abcd');
    await mkdir(foreign);
    await writeFile(join(foreign, 'disk.img'), 'not ours');
    bed.clock.advance(HOUR);
    taken(await backups.backUpNow(VM));
    expect(await chains()).toHaveLength(3);
    expect(await readdir(join(backupDir, VM, first.chainId))).toContain('0000-full.qcow2');
    expect(await readdir(foreign)).toEqual(['disk.img']);
  });

  it(`starts a new chain on a new UTC day and after ${MAX_CHAIN_FILES} files`, async () => {
    const first = taken(await backups.backUpNow(VM));
    bed.clock.advance(12 * HOUR); // 2026-08-07 00:00
    const nextDay = taken(await backups.backUpNow(VM));
    expect(nextDay).toMatchObject({ fullBecause: 'a new day' });
    expect(nextDay.chainId).not.toBe(first.chainId);
    for (let index = 1; index < MAX_CHAIN_FILES; index++) {
      bed.clock.advance(60_000);
      await backups.backUpNow(VM);
    }
    bed.clock.advance(60_000);
    expect(taken(await backups.backUpNow(VM)).fullBecause).toBe(
      `its chain has ${MAX_CHAIN_FILES} files`,
    );
  });

  it('removes the chains retention keeps no backup of', async () => {
    backups = service({
      VM_BACKUP_KEEP_LAST: '1',
      VM_BACKUP_KEEP_DAILY: '1',
      VM_BACKUP_KEEP_WEEKLY: '0',
    });
    const day1 = taken(await backups.backUpNow(VM));
    bed.clock.advance(24 * HOUR);
    const day2 = taken(await backups.backUpNow(VM));
    bed.clock.advance(24 * HOUR);
    const day3 = taken(await backups.backUpNow(VM));
    expect(await chains()).toEqual([day2.chainId, day3.chainId]);
    expect(bed.logs).toContainEqual(
      `log vm ${VM}: backup chain ${day1.chainId} removed (retention)`,
    );
  });

  it('copies a stopped VM from its file, once: the schedule skips it until its disk changes', async () => {
    bed.driver.runState = 'stopped';
    backups = service({ VM_BACKUP_EVERY_S: '3600' });
    await backups.backUpDue();
    expect(copier.asked).toEqual([expect.stringMatching(/^stopped ppn-copy-/)]);
    const [chain] = await chains();
    expect((await manifestOf(chain)).files[0]).toMatchObject({ kind: 'full', vm_state: 'stopped' });

    bed.clock.advance(2 * HOUR);
    await utimes(
      bed.files.disk(VM),
      new Date(bed.clock.wallNow() - 3 * HOUR),
      new Date(bed.clock.wallNow() - 3 * HOUR),
    );
    await backups.backUpDue();
    expect(copier.asked).toHaveLength(1);
    expect(bed.logs).toContainEqual(
      `log vm ${VM}: scheduled backup skipped: stopped, unchanged since its last backup`,
    );

    await utimes(bed.files.disk(VM), new Date(bed.clock.wallNow()), new Date(bed.clock.wallNow()));
    bed.clock.advance(2 * HOUR);
    await backups.backUpDue();
    expect(copier.asked).toHaveLength(2);
  });

  it('backs up on schedule only once VM_BACKUP_EVERY_S has passed since the last backup', async () => {
    backups = service({ VM_BACKUP_EVERY_S: '3600' });
    await backups.backUpDue();
    bed.clock.advance(HOUR - 1_000);
    await backups.backUpDue();
    expect(copier.asked.filter((asked) => !asked.startsWith('prepare'))).toHaveLength(1);
    bed.clock.advance(1_000);
    await backups.backUpDue();
    expect(copier.asked.filter((asked) => !asked.startsWith('prepare'))).toHaveLength(2);
  });

  it('refuses with nothing started: backups off, a VM not here, one already under way', async () => {
    await expect(service({ VM_BACKUP_DIR: '' }).request(VM)).rejects.toThrow(
      VmBackupRefusedError.off(),
    );
    await expect(backups.request('vm-00000000000000ff')).rejects.toThrow(VmNotOnNodeError);
    const answer = await backups.request(VM);
    expect(answer.in_progress_since).toBe('2026-08-06T12:00:00.000Z');
    await expect(backups.request(VM)).rejects.toThrow(`vm ${VM} is already being backed up`);
  });

  it('writes nothing when VM_BACKUP_DIR is gone (a USB disk not mounted)', async () => {
    const unmounted = join(backupDir, 'usb');
    backups = service({ VM_BACKUP_DIR: unmounted });
    await expect(backups.backUpNow(VM)).rejects.toThrow(
      `VM_BACKUP_DIR ${unmounted} is not a folder (is its disk mounted?)`,
    );
    expect(await readdir(backupDir)).toEqual([]);
    expect(copier.asked).toEqual(['prepare null']);
  });

  it('refuses a VM neither running nor stopped, saying so in last_error', async () => {
    await bed.leftBehind('vm-00000000000000b2', { error: 'disk: full' });
    await expect(backups.backUpNow('vm-00000000000000b2')).rejects.toThrow(
      'vm vm-00000000000000b2 is Error; only a Running or Stopped VM is backed up',
    );
    expect(await readdir(backupDir)).toEqual([]);
    expect((await backups.list('vm-00000000000000b2')).last_error).toMatch(/is Error/);
  });
});
