import { Injectable, Optional } from '@nestjs/common';
import { execFile } from 'node:child_process';
import { chmod, lstat, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { PRIVATE_FILE_MODE, VmFiles } from '../files/vm-files';
import { CrashFailpoint } from '../failpoints/crash-failpoint';
import { COPY_QMP_SOCKET } from '../qemu/qemu-command-line';
import { withQmp } from '../qemu/qmp.client';
import { runTool } from '../qemu/run-tool';
import {
  clearLeftovers,
  diskNode,
  fullCopy,
  incrementalCopy,
  replacedBitmap,
  whyFull,
} from './qmp-copy';
import { VmCopier } from './vm-copier';
import { CopyShutdown } from './copy-shutdown';
import { VmBackupRefusedError } from './vm-backups.errors';

/** How long QEMU's copy socket may stay silent; a job is polled far more often. */
const COPY_QMP_TIMEOUT_MS = 30_000;
/** qemu-img on a whole disk (convert, check) may take long on a slow USB disk. */
const QEMU_IMG_TIMEOUT_MS = 6 * 3_600_000;

const exec = promisify(execFile);

/**
 * Copies with QEMU's own incremental backup, over the VM's second QMP socket (`qmp-copy`,
 * see qemuArgs), so a copy never waits on, or holds up, the agent's use of the first.
 */
@Injectable()
export class QemuCopier extends VmCopier {
  constructor(
    private readonly files: VmFiles,
    private readonly failpoint: CrashFailpoint,
    /** Ends the qemu-img under way (a copy's, a pull's check) as the agent stops. */
    @Optional() private readonly shutdown?: CopyShutdown,
  ) {
    super();
  }

  /** `onVmDisk`: a change to the VM's own disk, never cut midway by the agent's stop. */
  private async qemuImg(args: string[], onVmDisk = false): Promise<void> {
    const signal = onVmDisk ? undefined : this.shutdown?.signal;
    await runTool('qemu-img', args, QEMU_IMG_TIMEOUT_MS, 'qemu-img', signal);
  }

  /** Test-only: the agent killed while QEMU's job runs (VM_HOST_FAILPOINT=during-copy). */
  private started(vmId: string): () => void {
    return () => this.failpoint.reached('during-copy', vmId);
  }

  private socket(vmId: string): string {
    return join(this.files.runDir(vmId), COPY_QMP_SOCKET);
  }

  /** A QEMU started before copies has no copy socket: it is copied once it starts again. */
  private async session<T>(vmId: string, work: Parameters<typeof withQmp<T>>[2]): Promise<T> {
    const socket = this.socket(vmId);
    const found = await stat(socket).then(
      (entry) => entry.isSocket(),
      () => false,
    );
    if (!found) throw VmBackupRefusedError.noCopySocket(vmId);
    return withQmp(socket, COPY_QMP_TIMEOUT_MS, work);
  }

  async prepareRunning(vmId: string, bitmap: string | null): Promise<string | null> {
    return this.session(vmId, async (qmp) => {
      const left = await clearLeftovers(qmp);
      const disk = await diskNode(qmp, this.files.disk(vmId));
      // A job cut short may have cleared the bitmap as it ended: its changes are in no file.
      if (left) return 'the last copy was cut short';
      return whyFull(disk, bitmap);
    });
  }

  async copyRunningFull(vmId: string, target: string, bitmap: string): Promise<void> {
    await this.session(vmId, async (qmp) => {
      const disk = await diskNode(qmp, this.files.disk(vmId));
      await this.qemuImg(['create', '-q', '-f', 'qcow2', target, String(disk.virtualSize)]);
      await chmod(target, PRIVATE_FILE_MODE);
      await fullCopy(qmp, disk, target, bitmap, this.started(vmId));
    });
  }

  async copyRunningIncremental(
    vmId: string,
    target: string,
    backing: string,
    bitmap: string,
  ): Promise<void> {
    await this.session(vmId, async (qmp) => {
      const disk = await diskNode(qmp, this.files.disk(vmId));
      // The backing by its name alone: qemu-img finds it beside the file, wherever the folder
      // goes. A copy staged for a peer has it on the peer only: named, not opened (-u).
      const beside = await stat(join(dirname(target), backing)).then(
        () => true,
        () => false,
      );
      await this.qemuImg([
        'create',
        '-q',
        '-f',
        'qcow2',
        ...(beside ? [] : ['-u']),
        '-b',
        backing,
        '-F',
        'qcow2',
        target,
        ...(beside ? [] : [String(disk.virtualSize)]),
      ]);
      await chmod(target, PRIVATE_FILE_MODE);
      await incrementalCopy(qmp, disk, target, bitmap, this.started(vmId));
    });
  }

  /**
   * The disk and its base image into one file, then the chain's bitmap added to the disk
   * (its other copy bitmaps removed), while the caller holds the VM's lock: nothing starts it.
   */
  async copyStopped(vmId: string, target: string, bitmap: string): Promise<void> {
    const disk = this.files.disk(vmId);
    await this.qemuImg(['convert', '-q', '-O', 'qcow2', disk, target]);
    await chmod(target, PRIVATE_FILE_MODE);
    for (const name of await diskBitmaps(disk)) {
      // One that cannot be removed is left: only the chain's own is ever used.
      if (replacedBitmap(bitmap, name)) {
        await this.qemuImg(['bitmap', '--remove', disk, name], true).catch(() => undefined);
      }
    }
    await this.qemuImg(['bitmap', '--add', disk, bitmap], true);
  }

  async convert(file: string, target: string): Promise<void> {
    await this.qemuImg(['convert', '-q', '-O', 'qcow2', file, target]);
    await chmod(target, PRIVATE_FILE_MODE);
  }

  async check(file: string, backing: string | null): Promise<void> {
    if ((await lstat(file)).isSymbolicLink())
      throw new Error(`${basename(file)} is a symbolic link`);
    // Its header alone first (-f qcow2: never probed; no chain opened yet).
    const { stdout } = await exec(
      'qemu-img',
      ['info', '-U', '-f', 'qcow2', '--output=json', file],
      { timeout: 60_000, signal: this.shutdown?.signal },
    );
    const why = headerProblem(JSON.parse(stdout) as HeaderInfo, backing);
    if (why) throw new Error(`${basename(file)}: ${why}`);
    await this.qemuImg(['check', '-q', '-f', 'qcow2', file]);
    // Every file of the chain must open, backing included.
    await this.qemuImg(['info', '--backing-chain', file]);
  }

  async describe(file: string): Promise<{ tool: string; virtualSizeBytes: number | null }> {
    qemuImgVersion ??= exec('qemu-img', ['--version'], { timeout: 10_000 }).then(
      ({ stdout }) => stdout.split('\n')[0].trim(),
      () => 'qemu-img',
    );
    const size = (await imageInfo(file).catch((): ImageInfo => ({})))['virtual-size'];
    return { tool: await qemuImgVersion, virtualSizeBytes: typeof size === 'number' ? size : null };
  }
}

interface HeaderInfo {
  'backing-filename'?: unknown;
  'full-backing-filename'?: unknown;
  'backing-filename-format'?: unknown;
  'format-specific'?: { data?: { 'data-file'?: unknown } };
}

/**
 * Why a qcow2 header is not one of a chain's files: a backing other than the expected file of
 * the same folder (by its plain name, in qcow2), or an external data file.
 */
export function headerProblem(info: HeaderInfo, backing: string | null): string | null {
  if (info['format-specific']?.data?.['data-file'] !== undefined) {
    return 'it names an external data file';
  }
  const named = info['backing-filename'] ?? info['full-backing-filename'];
  if (backing === null) return named === undefined ? null : 'a full copy names a backing file';
  if (named !== backing) return `its backing is not ${backing}, the chain's previous file`;
  if (info['backing-filename-format'] !== 'qcow2') return 'its backing is not read as qcow2';
  return null;
}

/** qemu-img's version line, asked once. */
let qemuImgVersion: Promise<string> | undefined;

interface ImageInfo {
  'virtual-size'?: unknown;
  'format-specific'?: { data?: { bitmaps?: Array<{ name?: unknown }> } };
}

/** qemu-img info of one file (not its chain); `-U`: a file QEMU has open is read too. */
async function imageInfo(file: string): Promise<ImageInfo> {
  const { stdout } = await exec('qemu-img', ['info', '-U', '--output=json', file], {
    timeout: 60_000,
  });
  return JSON.parse(stdout) as ImageInfo;
}

/** The persistent bitmaps stored in a qcow2 file that no QEMU has open. */
async function diskBitmaps(disk: string): Promise<string[]> {
  const info = await imageInfo(disk);
  return (info['format-specific']?.data?.bitmaps ?? [])
    .map(({ name }) => name)
    .filter((name): name is string => typeof name === 'string');
}
