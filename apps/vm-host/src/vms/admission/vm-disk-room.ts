import { Injectable, Logger } from '@nestjs/common';
import { stat, statfs } from 'node:fs/promises';
import {
  CommittedDisk,
  DiskDirSpace,
  DiskRoom,
  GIB,
  diskHasRoomAgain,
  diskRefusal,
  diskRoom,
  gibText,
} from '@app/fleet-domain';
import { VmHostConfig } from '../../config/vm-host.config';
import { VmDriver } from '../vm-driver';
import { VmFiles } from '../files/vm-files';
import { VmDiskTooSmallError, messageOf } from '../vms.errors';

/**
 * VM_DISK_DIR's room for VM disks: what the file system has, what each VM's disk holds and
 * was given (its disk_gb, else the base image's virtual size). See diskRoom.
 */
@Injectable()
export class VmDiskRoom {
  private readonly logger = new Logger('Vms');
  constructor(
    private readonly files: VmFiles,
    private readonly driver: VmDriver,
    private readonly config: VmHostConfig,
  ) {}

  /** VM_DISK_DIR's file system now. */
  async space(): Promise<DiskDirSpace> {
    const found = await statfs(this.files.root);
    return {
      totalBytes: found.blocks * found.bsize,
      availableBytes: found.bavail * found.bsize,
    };
  }

  /**
   * The base image's virtual size, or undefined (said once per failure) when it cannot be read:
   * then no disk is judged, and making the VM's disk says what is wrong with the image.
   */
  async imageBytes(): Promise<number | undefined> {
    try {
      return await this.driver.imageDiskBytes();
    } catch (error) {
      this.logger.warn(
        `node ${this.config.nodeId}: the base image's size cannot be read (${messageOf(error)}); disks not judged against the disk room`,
      );
      return undefined;
    }
  }

  /** Refuses a disk of `diskGb` smaller than the base image. */
  async checkSize(diskGb: number | undefined): Promise<void> {
    const imageBytes = await this.imageBytes();
    if (diskGb === undefined || imageBytes === undefined) return;
    if (diskGb * GIB < imageBytes) {
      throw new VmDiskTooSmallError(
        `disk_gb: ${diskGb} GiB is smaller than the base image (${gibText(imageBytes)}); ask for at least ${Math.ceil(imageBytes / GIB)}`,
      );
    }
  }

  /**
   * Why a disk of `diskGb` for `vmId` (an existing VM's own, which may hold bytes already, or a
   * new one) does not fit beside the disks of `others`; undefined when it does.
   */
  async refusal(
    wanted: { vmId?: string; diskGb?: number },
    others: ReadonlyArray<{ vm_id: string; disk_gb?: number }>,
  ): Promise<string | undefined> {
    const imageBytes = await this.imageBytes();
    if (imageBytes === undefined) return undefined;
    const [space, own, disks] = await Promise.all([
      this.space(),
      wanted.vmId === undefined ? 0 : this.allocatedBytes(wanted.vmId),
      Promise.all(others.map((vm) => this.committed(vm, imageBytes))),
    ]);
    const virtualBytes = wanted.diskGb === undefined ? imageBytes : wanted.diskGb * GIB;
    return diskRefusal(
      { virtualBytes, allocatedBytes: own },
      space,
      disks,
      this.config.diskOvercommit,
    );
  }

  /**
   * The room as the heartbeat reports it, with every VM's disk of `vms` counted; undefined
   * (said at debug only: the heartbeat goes on without it) when the file system or the base
   * image cannot be read.
   */
  async room(
    vms: ReadonlyArray<{ vm_id: string; disk_gb?: number }>,
  ): Promise<DiskRoom | undefined> {
    try {
      const imageBytes = await this.driver.imageDiskBytes();
      const [space, disks] = await Promise.all([
        this.space(),
        Promise.all(vms.map((vm) => this.committed(vm, imageBytes))),
      ]);
      return diskRoom(space, disks, this.config.diskOvercommit);
    } catch (error) {
      this.logger.debug(`node ${this.config.nodeId}: disk room not reported (${messageOf(error)})`);
      return undefined;
    }
  }

  /** Whether VM_DISK_DIR has more than its reserve free again: a paused VM's writes would land. */
  async hasRoomAgain(): Promise<boolean> {
    return diskHasRoomAgain(await this.space());
  }

  private async committed(
    vm: { vm_id: string; disk_gb?: number },
    imageBytes: number,
  ): Promise<CommittedDisk> {
    return {
      virtualBytes: vm.disk_gb === undefined ? imageBytes : vm.disk_gb * GIB,
      allocatedBytes: await this.allocatedBytes(vm.vm_id),
    };
  }

  /** What the VM's disk file holds on the file system (0 when it has none). */
  private async allocatedBytes(vmId: string): Promise<number> {
    return stat(this.files.disk(vmId)).then(
      (found) => found.blocks * 512,
      () => 0,
    );
  }
}
