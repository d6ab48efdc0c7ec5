import { Logger } from '@nestjs/common';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { vmHostConfig } from '../../../../../test/support/configs';
import { VmFiles } from '../files/vm-files';
import { VmCreationUnavailableError } from '../vms.errors';
import { QemuImages } from './qemu-images';

function qemuImgInfo(image: string): { format: string; 'backing-filename'?: string } {
  return JSON.parse(execFileSync('qemu-img', ['info', '--output=json', image]).toString()) as {
    format: string;
    'backing-filename'?: string;
  };
}

describe('QemuImages', () => {
  let root: string;
  let files: VmFiles;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'qemu-images-'));
    files = new VmFiles(vmHostConfig({ VM_DISK_DIR: root }));
    await files.prepare();
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await rm(root, { recursive: true, force: true });
  });

  it('makes one blank qcow2 base image when VM_BASE_IMAGE is unset, even for concurrent first creates', async () => {
    const qemu = new QemuImages(undefined, files);
    const images = await Promise.all([qemu.base(), qemu.base(), qemu.base()]);
    expect(new Set(images)).toEqual(new Set([join(root, 'base', 'blank.qcow2')]));
    const info = JSON.parse(
      execFileSync('qemu-img', ['info', '--output=json', images[0]]).toString(),
    ) as {
      format: string;
    };
    expect(info.format).toBe('qcow2');
    expect(await readdir(join(root, 'base'))).toEqual(['blank.qcow2']);
  });

  it('takes VM_BASE_IMAGE as it is when readable, and refuses it by name when not', async () => {
    const base = join(root, 'base.qcow2');
    await writeFile(base, 'any image');
    expect(await new QemuImages(base, files).base()).toBe(base);
    await expect(new QemuImages(join(root, 'nope.qcow2'), files).base()).rejects.toThrow(
      new VmCreationUnavailableError(
        `VM_BASE_IMAGE ${join(root, 'nope.qcow2')} does not exist or is not readable`,
      ),
    );
  });

  it("makes each VM's disk a private qcow2 overlay on the base image", async () => {
    const images = new QemuImages(undefined, files);
    const base = await images.base();
    const disk = await images.overlay('vm-0123456789abcdef', base);
    expect(disk).toBe(files.disk('vm-0123456789abcdef'));
    expect(qemuImgInfo(disk)).toMatchObject({ format: 'qcow2', 'backing-filename': base });
    expect(await readdir(join(root, 'disks'))).toEqual(['vm-0123456789abcdef.qcow2']);
  });

  it("makes a disk of disk_gb GiB, and reads an image's virtual size", async () => {
    const images = new QemuImages(undefined, files);
    const base = await images.base();
    expect(await images.virtualBytes(base)).toBe(1024 ** 3);
    const disk = await images.overlay('vm-0123456789abcdef', base, 3);
    expect(qemuImgInfo(disk)).toMatchObject({ 'virtual-size': 3 * 1024 ** 3 });
    expect(await images.virtualBytes(disk)).toBe(3 * 1024 ** 3);
  });
});
