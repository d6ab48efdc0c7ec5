import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { DesiredVmState, restartDelayMs, toRfc3339 } from '@app/fleet-domain';
import { VmHostConfig } from '../../config/vm-host.config';
import { VmLifeCycles } from '../life-cycle/vm-life-cycles';
import { DriverRecord, FoundVm, VmDriver } from '../vm-driver';
import { VmFiles } from '../files/vm-files';
import { VmSidecar } from '../files/vm-sidecar';
import { NO_RECORD, VmSidecars } from '../files/vm-sidecars';
import { VmAdmissionService } from '../admission/vm-admission.service';
import { ArrivedMoveIns } from '../admission/arrived-move-ins';
import { heldByMove } from '../files/move-hold';
import { StartCause, VmRestartService } from './vm-restart.service';
import { messageOf } from '../vms.errors';

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
 * Makes the sidecars agree with the processes that run, and the processes with the desired
 * states, one reconciliation at a time: a live process of a VM is adopted (its record kept, also
 * when the old agent was killed before writing it); a create cut short (a sidecar, never started,
 * not provisioning here) is finished (VmAdmissionService.resume). A VM that should run and has
 * no process is started again from its own disk: at once at start-up (a reboot, a power cut),
 * after the restart backoff when its process ended under a running agent (a crash); one an
 * operator stopped that runs anyway is stopped. At
 * start-up, a run folder without a sidecar (an agent killed while accepting) has any process
 * stopped and is removed. So the agent survives being killed at any moment.
 */
@Injectable()
export class VmReconciliationService {
  private readonly logger = new Logger('Vms');
  private readonly arrived: ArrivedMoveIns;

  constructor(
    private readonly files: VmFiles,
    private readonly sidecars: VmSidecars,
    private readonly lifecycle: VmLifeCycles,
    private readonly driver: VmDriver,
    private readonly clock: Clock,
    private readonly restarts: VmRestartService,
    private readonly admission: VmAdmissionService,
    config: VmHostConfig,
  ) {
    this.arrived = new ArrivedMoveIns(files, clock, this.logger, config.wgIp);
  }

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
    const due: VmSidecar[] = [];
    for (const vmId of vmIds) {
      // Being admitted, provisioned, started, stopped or destroyed here: its owner writes the sidecar.
      const sidecar = this.lifecycle.owned(vmId)
        ? await this.sidecars.of(vmId, found.get(vmId))
        : await this.lifecycle.locks.run(vmId, () =>
            this.settle(vmId, found.get(vmId), startUp, due),
          );
      if (sidecar) sidecars.push(sidecar);
    }
    for (const sidecar of due) {
      this.restarts.startAgain(sidecar, this.causeOf(sidecar.vm_id, startUp));
    }
    return { sidecars, found };
  }

  /** Why a due VM starts again: the agent's start, the end of its fencing, or a crash. */
  private causeOf(vmId: string, startUp: boolean): StartCause {
    if (startUp) return 'agent_start';
    return this.lifecycle.restarts.of(vmId).fenced ? 'unfenced' : 'crashed';
  }

  private async settle(
    vmId: string,
    live: FoundVm | undefined,
    startUp: boolean,
    due: VmSidecar[],
  ): Promise<VmSidecar | undefined> {
    const sidecar = await this.sidecars.of(vmId, live);
    // Work that began while this waited for the lock owns the VM now (the table lets a
    // reconciliation move idle VMs alone): its sidecar is that work's to write.
    if (!this.lifecycle.mayMove(vmId, 'reconcile')) return sidecar;
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
    if (live && sidecar.restoring) {
      // A move in cut short: its QEMU holds the whole guest (taken over), or waits for a guest
      // it may never get (rolled back).
      const arrived = await this.arrived.adopt(sidecar, live).catch((error: unknown) => {
        this.logger.error(`vm ${vmId}: its move in not settled yet: ${messageOf(error)}`);
        return undefined;
      });
      if (arrived) this.lifecycle.restarts.notice(vmId, this.clock.now());
      else if (arrived === false) this.admission.resume(sidecar);
    } else if (live) {
      await this.adopt(sidecar, live);
      if (sidecar.desired_state === DesiredVmState.Stopped) this.restarts.enforceStopped(sidecar);
      else this.lifecycle.restarts.notice(vmId, this.clock.now());
    } else if (
      sidecar.desired_state === DesiredVmState.Running &&
      (await heldByMove(this.files, vmId))
    ) {
      // Its move out unconfirmed: not started again while the new node may run it (PausedMoves).
    } else if (this.shouldRunAgain(sidecar)) {
      await this.noteExit(sidecar, startUp);
      if (this.lifecycle.restarts.due(vmId, this.clock.now())) due.push(sidecar);
    } else if (this.createCutShort(sidecar)) {
      this.admission.resume(sidecar);
    } else if (sidecar.started_at === null && sidecar.error === null) {
      sidecar.error = 'agent stopped before the VM was started';
      await this.write(sidecar);
      this.logger.error(`vm ${vmId} failed: ${sidecar.error}; listed as Error until deleted`);
    }
    return sidecar;
  }

  /** Takes a live process as the VM's, writing down its record when the sidecar lacks it. */
  private async adopt(sidecar: VmSidecar, live: FoundVm): Promise<void> {
    const adopted =
      sameRecord(sidecar.driver, live.record) &&
      sidecar.started_at !== null &&
      sidecar.error === null;
    if (adopted) return;
    sidecar.driver = live.record;
    if (sidecar.host_ports.length === 0) sidecar.host_ports = live.hostPorts;
    sidecar.started_at ??= toRfc3339(this.clock.now());
    sidecar.error = null;
    await this.write(sidecar);
    this.logger.warn(`vm ${sidecar.vm_id}: adopted its running process (${live.summary})`);
  }

  /**
   * A create an agent was killed in: its sidecar (the recorded intent) written, the VM never
   * started nor failed, and no process (a live one is adopted instead).
   */
  private createCutShort(sidecar: VmSidecar): boolean {
    return (
      sidecar.desired_state === DesiredVmState.Running &&
      sidecar.started_at === null &&
      sidecar.error === null &&
      !this.lifecycle.restarts.planned(sidecar.vm_id)
    );
  }

  /**
   * A VM with no process that should run: one that ran (its process ended: a crash, a power
   * cut), or one whose start failed and is planned again.
   */
  private shouldRunAgain(sidecar: VmSidecar): boolean {
    if (sidecar.desired_state !== DesiredVmState.Running) return false;
    if (this.lifecycle.restarts.planned(sidecar.vm_id)) return true;
    return sidecar.started_at !== null && sidecar.error === null;
  }

  /**
   * Writes down, once per exit, how the VM's process ended and plans its next start: at once
   * at start-up (not the VM's failure), after the backoff for a crash under this agent.
   */
  private async noteExit(sidecar: VmSidecar, startUp: boolean): Promise<void> {
    const vmId = sidecar.vm_id;
    if (this.lifecycle.restarts.planned(vmId)) return;
    const at = toRfc3339(this.clock.wallNow());
    const why = startUp
      ? `not running when the agent started at ${at} (a reboot, a power cut, or its process ended while the agent was down)`
      : `its process ended at ${at} while the VM should run`;
    sidecar.last_exit = why;
    await this.write(sidecar);
    this.lifecycle.crashed(vmId, why, this.clock.now(), !startUp);
    const { failures } = this.lifecycle.restarts.of(vmId);
    this.logger.warn(
      `vm ${vmId}: ${why}; ${startUp ? 'starting it again from its disk' : `${failures} time(s) in a row, starting it again from its disk in ${restartDelayMs(failures) / 1000} s`}`,
    );
  }

  private async write(sidecar: VmSidecar): Promise<void> {
    await this.files.writeSidecar(sidecar).catch((error: unknown) => {
      this.logger.error(`vm ${sidecar.vm_id}: could not update its sidecar: ${messageOf(error)}`);
    });
  }
}
