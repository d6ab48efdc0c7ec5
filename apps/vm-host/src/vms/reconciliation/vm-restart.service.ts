import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { DesiredVmState, VM_STARTS_AT_ONCE, restartDelayMs } from '@app/fleet-domain';
import { HostMetrics } from '../../metrics/host-metrics.service';
import { VmAdmissionService } from '../admission/vm-admission.service';
import { VmDriver } from '../vm-driver';
import { VmSidecar } from '../files/vm-sidecar';
import { VmLifeCycles, specOf } from '../life-cycle/vm-life-cycles';
import { VmSidecars } from '../files/vm-sidecars';
import { VmCreateError, messageOf } from '../vms.errors';

/** Why a VM is started again: shown in the log and as the restarts metric's reason. */
export type StartCause = 'agent_start' | 'crashed' | 'unfenced' | 'operator';

/** What the log says of a start again, by its cause (`failures`: in a row, for a crash). */
function startedAgainWhy(cause: StartCause, failures: number): string {
  if (cause === 'agent_start') return 'not running when the agent started';
  if (cause === 'unfenced') return "unfenced: its node's lease renewed";
  return `restart ${failures} after its process ended`;
}

/**
 * Starts existing VMs again from their own disks (same vm_id, overlay, cloud-init instance and,
 * where free, host ports), VM_STARTS_AT_ONCE at a time, each admitted as a create is (its RAM
 * and vCPUs beside every committed VM). A start that fails or is refused is tried again at the
 * restart backoff's pace; the reason is logged with the VM id and shown in its life cycle.
 */
@Injectable()
export class VmRestartService {
  private readonly logger = new Logger('Vms');
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  /** VMs an operator stopped whose process is being ended again, or could not be. */
  private readonly enforcing = new Set<string>();

  constructor(
    private readonly sidecars: VmSidecars,
    private readonly lifecycle: VmLifeCycles,
    private readonly admission: VmAdmissionService,
    private readonly driver: VmDriver,
    private readonly clock: Clock,
    private readonly metrics: HostMetrics = new HostMetrics(),
  ) {}

  /**
   * Starts the VM again in the background: listed Provisioning at once, started when a slot is
   * free. Nothing happens for a VM whose sidecar is gone or says stopped by then.
   */
  startAgain(sidecar: VmSidecar, cause: StartCause): void {
    const vmId = sidecar.vm_id;
    if (cause !== 'operator') this.metrics.countRestart(cause);
    this.lifecycle.startInBackground(vmId, () =>
      this.paced(() => this.lifecycle.locks.run(vmId, () => this.start(vmId, cause))),
    );
  }

  /**
   * Ends the process of a VM an operator stopped that runs anyway (a stop cut short by an agent
   * restart), in the background; said once per episode, however many reconciliations see it.
   */
  enforceStopped(sidecar: VmSidecar): void {
    const vmId = sidecar.vm_id;
    if (this.enforcing.has(vmId)) return;
    this.enforcing.add(vmId);
    this.logger.warn(`vm ${vmId} runs but was stopped by an operator; stopping it again`);
    void this.lifecycle.locks
      .run(vmId, () => this.driver.stop(vmId, sidecar.driver))
      .then(() => this.enforcing.delete(vmId))
      .catch((error: unknown) => {
        // Kept in `enforcing`: not tried again every 2 s; a delete or an agent restart is.
        this.logger.error(`vm ${vmId}: could not stop it: ${messageOf(error)}`);
      })
      .finally(() => this.lifecycle.announce());
  }

  private async start(vmId: string, cause: StartCause): Promise<void> {
    const sidecar = await this.sidecars.of(vmId);
    if (!sidecar || this.sidecars.isStandIn(sidecar)) return;
    if (sidecar.desired_state !== DesiredVmState.Running) return;
    if ((await this.driver.find([vmId])).has(vmId)) return;
    const refusal = await this.admission.refusalToStart(sidecar);
    try {
      if (refusal) throw new VmCreateError('admission', refusal);
      // Never started (its create failed, or an earlier agent was killed in it): files may be
      // missing or half made; a disk no guest has booted loses nothing by being made again.
      if (sidecar.started_at === null) await this.driver.makeFiles(specOf(sidecar), sidecar.driver);
      await this.lifecycle.launch(sidecar, sidecar.host_ports);
      if (cause !== 'operator') {
        const { failures } = this.lifecycle.restarts.of(vmId);
        this.logger.log(
          `vm ${vmId} started again from its disk (${startedAgainWhy(cause, failures)}${sidecar.last_exit ? `; last exit: ${sidecar.last_exit}` : ''})`,
        );
      }
    } catch (error) {
      const step = error instanceof VmCreateError ? `${error.step}: ` : '';
      const reason = `start failed at ${step}${messageOf(error)}`;
      const nowMs = this.clock.now();
      this.lifecycle.restarts.startFailed(vmId, reason, nowMs);
      const { failures } = this.lifecycle.restarts.of(vmId);
      this.metrics.countStartFailure();
      this.logger.error(
        `vm ${vmId}: ${reason}; ${failures} failure(s) in a row, next try in ${restartDelayMs(failures) / 1000} s${this.lifecycle.restarts.crashLooping(vmId) ? ' (listed Error)' : ''}`,
      );
    }
  }

  /** Runs work once fewer than VM_STARTS_AT_ONCE starts run. */
  private async paced<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= VM_STARTS_AT_ONCE) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running += 1;
    }
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running -= 1;
    }
  }
}
