import { Injectable, Logger } from '@nestjs/common';
import { rename, stat } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';
import { Clock } from '@app/daemon';
import { MAX_BACKUPS_LISTED, VmBackups, VmState, toRfc3339 } from '@app/fleet-domain';
import { VmHostConfig, VmHostConfigError } from '../../config/vm-host.config';
import type { VmSidecar } from '../files/vm-sidecar';
import { VmFiles } from '../files/vm-files';
import { VmSidecars } from '../files/vm-sidecars';
import { VmLifeCycles } from '../life-cycle/vm-life-cycles';
import { VmNotOnNodeError, messageOf } from '../vms.errors';
import {
  BackupFolder,
  BackupManifest,
  Chain,
  ChainFile,
  MANIFEST_FORMAT,
  chainFileName,
  fileDigest,
  partialFileName,
} from './backup-folder';
import { RetentionRules, chainsToRemove } from './backup-retention';
import { CopyLocks } from './copy-locks';
import { copyBitmapName } from './qmp-copy';
import { VmCopier } from './vm-copier';
import { VmBackupRefusedError } from './vm-backups.errors';
import { createRequestOf, describedVm } from './backup-manifest-vm';

/**
 * A chain grows by one incremental per backup until this many files, or until the UTC day
 * changes: a new day starts a new full chain, so retention drops whole days, and no restore
 * reads a chain longer than this.
 */
export const MAX_CHAIN_FILES = 64;

/** How a backup went: the file taken into the chain, or why none was taken. */
export type BackupOutcome =
  { taken: ChainFile; chainId: string; fullBecause: string | null } | { skipped: string };

/**
 * Backups of this node's VMs to VM_BACKUP_DIR: chains of qcow2 files (the first full, then
 * incrementals) made by the VmCopier, each file taken into its chain's manifest only once the
 * copy completed and the file checked, so a copy cut short never touches the last good one.
 * One backup at a time on the node, so copies never compete for the disk.
 */
@Injectable()
export class VmBackupsService {
  private readonly logger = new Logger('Backups');
  private readonly folder?: BackupFolder;
  private readonly rules: RetentionRules;
  /** The VM whose backup runs, and since when (wall clock, ms). */
  private readonly underWay = new Map<string, number>();
  private readonly lastErrors = new Map<string, string>();
  /** When each VM's last scheduled attempt began (wall clock, ms), failed ones too. */
  private readonly lastAttempts = new Map<string, number>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly config: VmHostConfig,
    private readonly files: VmFiles,
    private readonly sidecars: VmSidecars,
    private readonly lifecycle: VmLifeCycles,
    private readonly copier: VmCopier,
    private readonly clock: Clock,
    private readonly copyLocks: CopyLocks = new CopyLocks(),
  ) {
    if (config.backupDir) {
      const inside = relative(config.diskDir, config.backupDir);
      if (!inside.startsWith('..') && !isAbsolute(inside)) {
        throw new VmHostConfigError(
          `VM_BACKUP_DIR ${config.backupDir} is in VM_DISK_DIR ${config.diskDir}: a backup on the disk that dies with its VMs protects nothing (give it another disk: a USB disk, a NAS mount)`,
        );
      }
      this.folder = new BackupFolder(config.backupDir);
    }
    this.rules = {
      keepLast: config.backupKeepLast,
      keepDaily: config.backupKeepDaily,
      keepWeekly: config.backupKeepWeekly,
    };
  }

  get enabled(): boolean {
    return this.folder !== undefined;
  }

  /** The VM's backups, newest first, with the one under way and the last failure. */
  async list(vmId: string): Promise<VmBackups> {
    await this.sidecarOf(vmId);
    const since = this.underWay.get(vmId);
    const backups = this.folder ? await this.listed(this.folder, vmId) : [];
    return {
      vm_id: vmId,
      backups: backups.slice(0, MAX_BACKUPS_LISTED),
      in_progress_since: since === undefined ? null : toRfc3339(since),
      last_error: this.lastErrors.get(vmId) ?? null,
    };
  }

  /**
   * A backup of the VM now, in the background (a full copy may take long): refused at once
   * when backups are off, the VM is not here, or one of it is already queued or under way.
   */
  async request(vmId: string): Promise<VmBackups> {
    await this.claim(vmId);
    void this.queued(vmId, 'asked').catch(() => undefined);
    return this.list(vmId);
  }

  /**
   * Every VM whose last backup (or attempt) is VM_BACKUP_EVERY_S old, one after the other; a
   * stopped VM once after it stopped (its file has not changed since).
   */
  async backUpDue(): Promise<void> {
    if (!this.folder || this.config.backupEveryS === 0) return;
    const everyMs = this.config.backupEveryS * 1000;
    for (const sidecar of await this.sidecars.all()) {
      const vmId = sidecar.vm_id;
      if (this.sidecars.isStandIn(sidecar) || this.underWay.has(vmId)) continue;
      const nowMs = this.clock.wallNow();
      const last = Math.max(
        this.lastAttempts.get(vmId) ?? 0,
        (await this.lastPoint(this.folder, vmId))?.takenAtMs ?? 0,
      );
      // Looked at again: one asked for meanwhile (during the read above) is under way already.
      if (nowMs - last < everyMs || this.underWay.has(vmId)) continue;
      this.lastAttempts.set(vmId, nowMs);
      this.underWay.set(vmId, nowMs);
      await this.queued(vmId, 'scheduled').catch(() => undefined);
    }
  }

  /** Runs after the backups before it; `underWay` was set by the caller. */
  private queued(vmId: string, why: 'asked' | 'scheduled'): Promise<BackupOutcome> {
    const run = this.queue.then(async () => {
      try {
        const outcome = await this.copyLocks.run(vmId, () => this.backUp(vmId, why));
        this.lastErrors.delete(vmId);
        if ('taken' in outcome) {
          const { taken, chainId, fullBecause } = outcome;
          this.logger.log(
            `vm ${vmId}: ${why} backup taken: ${taken.kind} ${chainId}/${taken.file}, ${taken.size_bytes} bytes${fullBecause ? ` (full: ${fullBecause})` : ''}`,
          );
        } else {
          this.logger.log(`vm ${vmId}: ${why} backup skipped: ${outcome.skipped}`);
        }
        return outcome;
      } catch (error) {
        this.lastErrors.set(vmId, messageOf(error).slice(0, 1000));
        this.logger.warn(`vm ${vmId}: ${why} backup failed: ${messageOf(error)}`);
        throw error;
      } finally {
        this.underWay.delete(vmId);
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * A backup asked for now, queued behind any under way on the node; its outcome once taken.
   * The refusals are thrown before anything is queued.
   */
  async backUpNow(vmId: string): Promise<BackupOutcome> {
    await this.claim(vmId);
    return this.queued(vmId, 'asked');
  }

  private async claim(vmId: string): Promise<void> {
    if (!this.folder) throw VmBackupRefusedError.off();
    await this.sidecarOf(vmId);
    if (this.underWay.has(vmId)) throw VmBackupRefusedError.underWay(vmId);
    this.underWay.set(vmId, this.clock.wallNow());
  }

  private async backUp(vmId: string, why: 'asked' | 'scheduled'): Promise<BackupOutcome> {
    const folder = this.folder as BackupFolder;
    const sidecar = await this.sidecarOf(vmId);
    const state = await this.lifecycle.stateOf(sidecar);
    if (state === VmState.Running) return this.backUpRunning(folder, sidecar);
    if (state !== VmState.Stopped) throw VmBackupRefusedError.notSteady(vmId, state);
    // Under the VM's lock: nothing starts it while its file is read.
    return this.lifecycle.locks.run(vmId, async () => {
      const now = await this.lifecycle.stateOf(sidecar);
      if (now !== VmState.Stopped) throw VmBackupRefusedError.notSteady(vmId, now);
      return this.backUpStopped(folder, sidecar, why);
    });
  }

  private async backUpRunning(folder: BackupFolder, sidecar: VmSidecar): Promise<BackupOutcome> {
    const vmId = sidecar.vm_id;
    const chain = await this.currentChain(folder, vmId);
    const copierSays = await this.copier.prepareRunning(
      vmId,
      chain ? copyBitmapName(chain.id) : null,
    );
    const fullBecause = chain ? (this.whyNewChain(chain) ?? copierSays) : copierSays;
    if (fullBecause !== null || !chain) {
      return this.fullCopy(folder, sidecar, 'running', fullBecause, (target, bitmap) =>
        this.copier.copyRunningFull(vmId, target, bitmap),
      );
    }
    const files = chain.manifest.files;
    const index = files.length;
    const backing = files[index - 1].file;
    const taken = await this.take(chain.dir, index, 'incremental', backing, 'running', (target) =>
      this.copier.copyRunningIncremental(vmId, target, backing, copyBitmapName(chain.id)),
    );
    await this.record(folder, chain.dir, { ...chain.manifest, files: [...files, taken] }, sidecar);
    await this.prune(folder, vmId);
    return { taken, chainId: chain.id, fullBecause: null };
  }

  private async backUpStopped(
    folder: BackupFolder,
    sidecar: VmSidecar,
    why: 'asked' | 'scheduled',
  ): Promise<BackupOutcome> {
    const vmId = sidecar.vm_id;
    const last = await this.lastPoint(folder, vmId);
    if (why === 'scheduled' && last?.vmState === 'stopped') {
      const changedMs = (await stat(this.files.disk(vmId))).mtimeMs;
      if (changedMs <= last.takenAtMs)
        return { skipped: 'stopped, unchanged since its last backup' };
    }
    return this.fullCopy(folder, sidecar, 'stopped', 'the VM is stopped', (target, bitmap) =>
      this.copier.copyStopped(vmId, target, bitmap),
    );
  }

  /** Why the chain takes no more files, or null: its length, its day, or what a cut copy left. */
  private whyNewChain(chain: Chain): string | null {
    if (chain.leftovers.length > 0) return 'the last copy was cut short';
    if (chain.manifest.files.length >= MAX_CHAIN_FILES) {
      return `its chain has ${MAX_CHAIN_FILES} files`;
    }
    const today = new Date(this.clock.wallNow()).toISOString().slice(0, 10);
    if (!chain.manifest.files[0].taken_at.startsWith(today)) return 'a new day';
    return null;
  }

  /** A new chain with one full copy; its folder removed again when the copy fails. */
  private async fullCopy(
    folder: BackupFolder,
    sidecar: VmSidecar,
    vmState: ChainFile['vm_state'],
    fullBecause: string | null,
    copy: (target: string, bitmap: string) => Promise<void>,
  ): Promise<BackupOutcome> {
    const vmId = sidecar.vm_id;
    const chain = await folder.newChain(vmId, this.clock.wallNow());
    let taken: ChainFile;
    try {
      taken = await this.take(chain.dir, 0, 'full', null, vmState, (target) =>
        copy(target, copyBitmapName(chain.id)),
      );
      const manifest: BackupManifest = {
        format: MANIFEST_FORMAT,
        vm_id: vmId,
        node_id: this.config.nodeId,
        chain_id: chain.id,
        vm: {},
        create_request: {},
        hypervisor: { qemu_img: '', machine: 'q35', disk_virtual_size_bytes: null },
        files: [taken],
        restore: '',
      };
      await this.record(folder, chain.dir, manifest, sidecar);
    } catch (error) {
      await folder.remove(chain.dir);
      throw error;
    }
    await this.prune(folder, vmId);
    return { taken, chainId: chain.id, fullBecause };
  }

  /**
   * One copy into a new file of the chain's folder (`NNNN.partial.qcow2`), checked, then
   * renamed to its name in the chain; removed when anything failed.
   */
  private async take(
    dir: string,
    index: number,
    kind: ChainFile['kind'],
    backing: string | null,
    vmState: ChainFile['vm_state'],
    copy: (target: string) => Promise<void>,
  ): Promise<ChainFile> {
    const partial = join(dir, partialFileName(index));
    const file = chainFileName(index, kind);
    const takenAt = toRfc3339(this.clock.wallNow());
    try {
      await copy(partial);
      await this.copier.check(partial, backing);
      const { size, sha256 } = await fileDigest(partial);
      await rename(partial, join(dir, file));
      return {
        file,
        kind,
        backing,
        taken_at: takenAt,
        vm_state: vmState,
        size_bytes: size,
        sha256,
      };
    } catch (error) {
      await this.folder?.remove(partial);
      throw error;
    }
  }

  /** The manifest with the VM as it is now and what reads the chain without this product. */
  private async record(
    folder: BackupFolder,
    dir: string,
    manifest: BackupManifest,
    sidecar: VmSidecar,
  ): Promise<void> {
    const last = manifest.files[manifest.files.length - 1].file;
    const described = await this.copier.describe(join(dir, last));
    await folder.writeManifest(dir, {
      ...manifest,
      vm: describedVm(sidecar),
      create_request: createRequestOf(sidecar),
      hypervisor: {
        qemu_img: described.tool,
        machine: 'q35',
        disk_virtual_size_bytes: described.virtualSizeBytes,
      },
      restore: `qemu-img convert -O qcow2 ${last} ${sidecar.vm_id}.qcow2 (in this folder: the VM's whole disk as of the last file's taken_at; any earlier file for an earlier point)`,
    });
  }

  /**
   * Retention (VM_BACKUP_KEEP_*): the chains none of whose backups is kept are removed, and
   * chain folders a first copy cut short left behind.
   */
  private async prune(folder: BackupFolder, vmId: string): Promise<void> {
    const { chains, broken } = await folder.chains(vmId);
    const points = chains.flatMap((chain) =>
      chain.manifest.files.map(({ taken_at }) => ({
        chainId: chain.id,
        takenAtMs: Date.parse(taken_at),
      })),
    );
    const removed = new Set(chainsToRemove(points, this.rules));
    for (const chain of chains.filter(({ id }) => removed.has(id))) {
      await folder.remove(chain.dir);
      this.logger.log(`vm ${vmId}: backup chain ${chain.id} removed (retention)`);
    }
    for (const dir of broken) await folder.remove(dir);
  }

  /** The newest chain, its leftovers (files a cut copy left) removed; undefined when none. */
  private async currentChain(folder: BackupFolder, vmId: string): Promise<Chain | undefined> {
    const { chains } = await folder.chains(vmId);
    const chain = chains[chains.length - 1];
    for (const leftover of chain?.leftovers ?? []) await folder.remove(join(chain.dir, leftover));
    return chain;
  }

  private async lastPoint(
    folder: BackupFolder,
    vmId: string,
  ): Promise<{ takenAtMs: number; vmState: ChainFile['vm_state'] } | undefined> {
    const { chains } = await folder.chains(vmId);
    const files = chains[chains.length - 1]?.manifest.files;
    const last = files?.[files.length - 1];
    return last && { takenAtMs: Date.parse(last.taken_at), vmState: last.vm_state };
  }

  private async listed(folder: BackupFolder, vmId: string): Promise<VmBackups['backups']> {
    const { chains } = await folder.chains(vmId);
    return chains
      .flatMap((chain) =>
        chain.manifest.files.map((file, index) => ({
          backup_id: `${chain.id}/${String(index).padStart(4, '0')}`,
          kind: file.kind,
          taken_at: file.taken_at,
          size_bytes: file.size_bytes,
          path: join(chain.dir, file.file),
        })),
      )
      .sort((a, b) => (a.backup_id < b.backup_id ? 1 : -1));
  }

  private async sidecarOf(vmId: string): Promise<VmSidecar> {
    const sidecar = await this.sidecars.of(vmId);
    if (!sidecar) throw new VmNotOnNodeError(vmId);
    return sidecar;
  }
}
