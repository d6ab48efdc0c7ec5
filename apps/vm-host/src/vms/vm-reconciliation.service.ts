import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { toRfc3339 } from '@app/fleet-domain';
import { VmLifecycle } from './vm-lifecycle';
import { DriverRecord, FoundVm, VmDriver } from './vm-driver';
import { VmFiles, VmSidecar } from './vm-files';
import { NO_RECORD, VmSidecars } from './vm-sidecars';
import { messageOf } from './vms.errors';

/** The lock key of reconciliations (vm ids never look like it). */
const RECONCILIATION = '<reconciliation>';

/** Every VM's sidecar once reconciled, and the live processes the driver found of them. */
export interface ReconciledVms {
  sidecars: VmSidecar[];
  found: Map<string, FoundVm>;
}

function sameRecord(a: DriverRecord, b: DriverRecord): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((key) => a[key] === b[key]);
}

/**
 * Makes the sidecars agree with the processes that run, one reconciliation at a time: a live
 * process of a VM is adopted (its record kept, also when the old agent was killed before
 * writing it); a VM never started and not provisioning here is marked Error. At start-up, a
 * run folder without a sidecar (an agent killed while accepting) has any process stopped and
 * is removed. So the agent survives being killed at any moment.
 */
@Injectable()
export class VmReconciliationService {
  private readonly logger = new Logger('Vms');

  constructor(
    private readonly files: VmFiles,
    private readonly sidecars: VmSidecars,
    private readonly lifecycle: VmLifecycle,
    private readonly driver: VmDriver,
    private readonly clock: Clock,
  ) {}

  /** At start-up, before the agent listens: also clears what an agent killed mid-accept left. */
  recover(): Promise<ReconciledVms> {
    return this.lifecycle.locks.run(RECONCILIATION, () => this.reconcile(true));
  }

  /** Before each heartbeat. */
  reconciled(): Promise<ReconciledVms> {
    return this.lifecycle.locks.run(RECONCILIATION, () => this.reconcile(false));
  }

  private async reconcile(startUp: boolean): Promise<ReconciledVms> {
    const vmIds = await this.files.listVmIds();
    const found = await this.driver.find(vmIds);
    const sidecars: VmSidecar[] = [];
    for (const vmId of vmIds) {
      // Being admitted, provisioned or destroyed here: its owner writes the sidecar.
      const sidecar = this.lifecycle.owned(vmId)
        ? await this.sidecars.of(vmId, found.get(vmId))
        : await this.lifecycle.locks.run(vmId, () => this.settle(vmId, found.get(vmId), startUp));
      if (sidecar) sidecars.push(sidecar);
    }
    return { sidecars, found };
  }

  private async settle(
    vmId: string,
    live: FoundVm | undefined,
    startUp: boolean,
  ): Promise<VmSidecar | undefined> {
    const sidecar = await this.sidecars.of(vmId, live);
    // Unreadable: kept as it is, its process (if any) left running and committed with the RAM
    // and vCPUs it was started with; only a delete acts on it.
    if (sidecar && this.sidecars.isStandIn(sidecar)) return sidecar;
    if (!sidecar) {
      if (startUp) {
        await this.driver.stop(vmId, NO_RECORD);
        await this.files.removeAll(vmId);
        this.logger.warn(`vm ${vmId}: removed its run folder, left without a sidecar`);
      }
      return undefined;
    }
    if (live) {
      const adopted =
        sameRecord(sidecar.driver, live.record) &&
        sidecar.started_at !== null &&
        sidecar.error === null;
      if (adopted) return sidecar;
      sidecar.driver = live.record;
      if (sidecar.host_ports.length === 0) sidecar.host_ports = live.hostPorts;
      sidecar.started_at ??= toRfc3339(this.clock.now());
      sidecar.error = null;
      await this.write(sidecar);
      this.logger.warn(`vm ${vmId}: adopted its running process (${live.summary})`);
    } else if (sidecar.started_at === null && sidecar.error === null) {
      sidecar.error = 'agent stopped before the VM was started';
      await this.write(sidecar);
      this.logger.error(`vm ${vmId} failed: ${sidecar.error}; listed as Error until deleted`);
    }
    return sidecar;
  }

  private async write(sidecar: VmSidecar): Promise<void> {
    await this.files.writeSidecar(sidecar).catch((error: unknown) => {
      this.logger.error(`vm ${sidecar.vm_id}: could not update its sidecar: ${messageOf(error)}`);
    });
  }
}
