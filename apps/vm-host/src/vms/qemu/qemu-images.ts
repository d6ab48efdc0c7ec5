import { Logger } from '@nestjs/common';
import { constants } from 'node:fs';
import { access, chmod, rename, rm, stat } from 'node:fs/promises';
import { PRIVATE_FILE_MODE, VmFiles } from '../files/vm-files';
import { VmCreationUnavailableError } from '../vms.errors';
import { runTool } from './run-tool';

/** Size of the blank base image made when VM_BASE_IMAGE is unset: it boots nothing. */
const BLANK_BASE_IMAGE_SIZE = '1G';

/**
 * The qcow2 images QEMU runs VMs on: one base image (VM_BASE_IMAGE, or a blank one the agent
 * makes once) and, per VM, an overlay on it that the VM writes, so the base stays untouched.
 */
export class QemuImages {
  private readonly logger = new Logger('QemuDriver');
  private blankImage?: Promise<string>;
  private readonly sizes = new Map<string, { modifiedMs: number; bytes: number }>();

  constructor(
    /** VM_BASE_IMAGE; undefined when it is unset. */
    private readonly configured: string | undefined,
    private readonly files: VmFiles,
  ) {}

  /** VM_BASE_IMAGE, or a small blank qcow2 the agent makes once when it is unset. */
  async base(): Promise<string> {
    if (this.configured) {
      try {
        await access(this.configured, constants.R_OK);
      } catch {
        throw new VmCreationUnavailableError(
          `VM_BASE_IMAGE ${this.configured} does not exist or is not readable`,
        );
      }
      return this.configured;
    }
    // One blank image, made once even when the first creates arrive together.
    this.blankImage ??= this.makeBlank().catch((error: unknown) => {
      this.blankImage = undefined;
      throw error;
    });
    return this.blankImage;
  }

  /**
   * The virtual size of an image in bytes, as qemu-img reports it; remembered per path and
   * modification time, so an admission asks qemu-img once per base image.
   */
  async virtualBytes(image: string): Promise<number> {
    const modifiedMs = (await stat(image)).mtimeMs;
    const known = this.sizes.get(image);
    if (known?.modifiedMs === modifiedMs) return known.bytes;
    const info = JSON.parse(await runTool('qemu-img', ['info', '--output=json', '-U', image])) as {
      'virtual-size'?: unknown;
    };
    const bytes = info['virtual-size'];
    if (typeof bytes !== 'number' || !Number.isSafeInteger(bytes) || bytes <= 0) {
      throw new Error(`qemu-img info ${image}: no virtual size`);
    }
    this.sizes.set(image, { modifiedMs, bytes });
    return bytes;
  }

  /**
   * The VM's disk: a qcow2 overlay on the base image, private to the agent; `sizeGb` GiB when
   * given (at least the base image's size), else the base image's size.
   */
  async overlay(vmId: string, baseImage: string, sizeGb?: number): Promise<string> {
    const disk = this.files.disk(vmId);
    await runTool('qemu-img', [
      'create',
      '-q',
      '-f',
      'qcow2',
      '-F',
      'qcow2',
      '-b',
      baseImage,
      disk,
      ...(sizeGb === undefined ? [] : [`${sizeGb}G`]),
    ]);
    await chmod(disk, PRIVATE_FILE_MODE);
    return disk;
  }

  private async makeBlank(): Promise<string> {
    const blank = this.files.blankBaseImage();
    try {
      await access(blank, constants.R_OK);
    } catch {
      const partial = `${blank}.tmp`;
      try {
        await runTool('qemu-img', ['create', '-q', '-f', 'qcow2', partial, BLANK_BASE_IMAGE_SIZE]);
        await chmod(partial, PRIVATE_FILE_MODE);
        await rename(partial, blank);
      } catch (error) {
        await rm(partial, { force: true });
        throw error;
      }
      this.logger.log(`made blank base image ${blank} (VM_BASE_IMAGE unset; it boots nothing)`);
    }
    return blank;
  }
}
