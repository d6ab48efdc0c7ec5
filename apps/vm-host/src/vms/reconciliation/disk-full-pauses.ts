import { Injectable, Logger } from '@nestjs/common';
import { VmHostConfig } from '../../config/vm-host.config';
import { VmDiskRoom } from '../admission/vm-disk-room';
import { VmSidecar } from '../files/vm-sidecar';
import { VmLifeCycles } from '../life-cycle/vm-life-cycles';
import { VmDriver } from '../vm-driver';
import { messageOf } from '../vms.errors';

/**
 * VMs their hypervisor paused on a failed write (VM_DISK_DIR full: QMP run state io-error) are
 * resumed by the agent once the file system has more than its reserve free again, so freeing
 * room (a deleted VM's disk removed, a file cleared) needs no operator. A VM that fills the
 * disk again is paused again by its hypervisor, and resumed again once there is room.
 */
@Injectable()
export class DiskFullPauses {
  private readonly logger = new Logger('Vms');

  constructor(
    private readonly lifecycle: VmLifeCycles,
    private readonly driver: VmDriver,
    private readonly diskRoom: VmDiskRoom,
    private readonly config: VmHostConfig,
  ) {}

  /** Resumes the VMs last seen paused on a full disk, when there is room again. */
  async resumeWhereRoom(sidecars: readonly VmSidecar[]): Promise<void> {
    const paused = new Set(this.lifecycle.pausedOnFullDisk(sidecars.map(({ vm_id }) => vm_id)));
    // An operator's stop, restart or delete under way acts on it instead.
    const due = sidecars.filter(({ vm_id }) => paused.has(vm_id) && !this.lifecycle.owned(vm_id));
    if (due.length === 0 || !(await this.diskRoom.hasRoomAgain())) return;
    for (const sidecar of due) {
      const vmId = sidecar.vm_id;
      await this.lifecycle.locks.run(vmId, async () => {
        try {
          await this.driver.resume(vmId, sidecar.driver);
        } catch (error) {
          this.logger.warn(`vm ${vmId}: could not be resumed: ${messageOf(error)}`);
          return;
        }
        this.lifecycle.resumedFromDiskFull(vmId);
        this.logger.log(
          `vm ${vmId}: resumed (VM_DISK_DIR on node ${this.config.nodeId} has room again)`,
        );
      });
    }
    this.lifecycle.announce();
  }
}
