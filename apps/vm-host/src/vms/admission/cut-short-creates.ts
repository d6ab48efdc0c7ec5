import { Logger } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { rfc3339ToEpochNanos } from '@app/fleet-domain';
import { diskProblemOf } from './disk-problem';
import { VmLifeCycles, specOf } from '../life-cycle/vm-life-cycles';
import { VmDriver } from '../vm-driver';
import { VmFiles } from '../files/vm-files';
import { VmSidecar } from '../files/vm-sidecar';
import { VmSidecars } from '../files/vm-sidecars';
import { VmDiskError } from '../vms.errors';

/**
 * Creates an agent was killed in after writing the VM's sidecar (the recorded intent) and before
 * its first start: finished or rolled back at the agent's start. Part of VmAdmissionService.
 */
export class CutShortCreates {
  constructor(
    private readonly files: VmFiles,
    private readonly sidecars: VmSidecars,
    private readonly lifecycle: VmLifeCycles,
    private readonly driver: VmDriver,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /**
   * Finishes, in the background, a create an agent was killed in after writing its sidecar (the
   * recorded intent) and before the VM's first start: its files made again (the disk was never
   * booted, so nothing is lost), then started as a create is, listed Provisioning meanwhile. A
   * full or unwritable VM_DISK_DIR rolls it back instead (nothing of it is left, so a retry of
   * its spawn makes it anew); a failing tool lists it Error with the step, as a create's failure.
   */
  resume(sidecar: VmSidecar): void {
    const vmId = sidecar.vm_id;
    if (sidecar.restoring) {
      // Its disk may be partial: nothing of it is kept; the controller's restore failed too.
      this.logger.warn(
        `vm ${vmId}: its restore from ${sidecar.restored_from ?? 'a copy'} was cut short before its disk was whole: rolling it back`,
      );
      this.lifecycle.provision(sidecar, async () => {
        // A live move in: its QEMU, waiting for (or holding, paused) the guest, ends first.
        await this.driver.stop(vmId, sidecar.driver);
        await this.files.removeAll(vmId);
        this.sidecars.forget(vmId);
        this.logger.warn(`vm ${vmId}: restore rolled back, nothing of it left`);
        return false;
      });
      this.lifecycle.announce();
      return;
    }
    const late = this.unansweredPastDeadline(sidecar);
    this.logger.warn(
      late
        ? `vm ${vmId}: its create was cut short before its spawn was answered, and its deadline ${sidecar.spawn_deadline} has passed (the controller stopped waiting for it, and may have placed it elsewhere): rolling it back`
        : `vm ${vmId}: its create was cut short (the agent stopped before the VM's first start); making its files and starting it`,
    );
    this.lifecycle.provision(sidecar, async () => {
      if (late) {
        await this.files.removeAll(vmId);
        this.sidecars.forget(vmId);
        this.logger.warn(`vm ${vmId}: create rolled back, nothing of it left`);
        return false;
      }
      try {
        await this.driver.makeFiles(specOf(sidecar), sidecar.driver);
        return true;
      } catch (error) {
        const problem = diskProblemOf(error);
        if (!problem) throw error;
        await this.files.removeAll(vmId);
        this.sidecars.forget(vmId);
        const refusal = new VmDiskError(this.files.root, problem, 'making its files again');
        this.logger.error(`vm ${vmId}: create rolled back: ${refusal.message}`);
        return false;
      }
    });
    this.lifecycle.announce();
  }

  /** A create whose spawn was never answered (its files not all made) and is now too late. */
  private unansweredPastDeadline(sidecar: VmSidecar): boolean {
    if (sidecar.spawn_deadline === undefined) return false;
    const deadline = rfc3339ToEpochNanos(sidecar.spawn_deadline) ?? 0n;
    return BigInt(this.clock.wallNow()) * 1_000_000n > deadline;
  }
}
