import { Injectable, Logger } from '@nestjs/common';
import { Subject } from 'rxjs';
import { Clock } from '@app/daemon';
import { CommittedVm, VmRecord, VmState, toRfc3339 } from '@app/fleet-domain';
import { HostMetrics } from '../metrics/host-metrics.service';
import { CrashFailpoint } from './crash-failpoint';
import { KeyedMutex } from './keyed-mutex';
import { FoundVm, StartedVm, VmDriver, VmRunState, VmSpec } from './vm-driver';
import { VmFiles, VmSidecar } from './vm-files';
import { VmAccelerationError, VmCreateError, messageOf } from './vms.errors';

const RUN_STATES: Record<VmRunState, VmState> = {
  running: VmState.Running,
  stopped: VmState.Stopped,
  // Alive but not answering (yet): not known to run.
  unknown: VmState.Provisioning,
};

/**
 * Each VM's state and its moves in this process. A VM is Provisioning while it is admitted
 * here and then started after the answer; once started it is what the driver sees (Running,
 * Stopped, Provisioning while it does not answer yet); a failed start, or one an earlier agent
 * never made, is Error with the reason in its sidecar. The locks every VM service shares live
 * here too, so they agree on who owns a VM at any moment.
 */
@Injectable()
export class VmLifecycle {
  private readonly logger = new Logger('Vms');
  private readonly changed = new Subject<void>();
  /** Emits when a VM was accepted, settled or deleted here. */
  readonly changes = this.changed.asObservable();
  /** VMs being admitted (files made, not yet answered) in this process. */
  private readonly beingAdmitted = new Set<string>();
  /** Provisioning under way in this process, by vm_id. */
  private readonly provisioning = new Map<string, Promise<void>>();
  /**
   * Admission: one at a time, so capacity and keys are judged against every VM accepted
   * before. Reconciliation: one at a time; it never waits for an admission, so a slow disk
   * does not hold back heartbeats. A vm id: one destroy or adoption of that VM at a time.
   */
  readonly locks = new KeyedMutex();

  constructor(
    private readonly files: VmFiles,
    private readonly driver: VmDriver,
    private readonly clock: Clock,
    private readonly failpoint: CrashFailpoint,
    private readonly metrics: HostMetrics = new HostMetrics(),
  ) {}

  /** Runs the admission of a VM: Provisioning, and committed, until it is answered. */
  async admitting<T>(vmId: string, admission: () => Promise<T>): Promise<T> {
    this.beingAdmitted.add(vmId);
    try {
      return await admission();
    } finally {
      this.beingAdmitted.delete(vmId);
    }
  }

  /** True while this process admits or provisions the VM: its sidecar is theirs to write. */
  inProgress(vmId: string): boolean {
    return this.beingAdmitted.has(vmId) || this.provisioning.has(vmId);
  }

  /** True while any work here (admission, provisioning, destroy, adoption) holds the VM. */
  owned(vmId: string): boolean {
    return this.inProgress(vmId) || this.locks.busy(vmId);
  }

  /** Starts an accepted VM in the background; announces the change once it settles. */
  provision(sidecar: VmSidecar): void {
    const vmId = sidecar.vm_id;
    const task = this.start(sidecar).finally(() => {
      this.provisioning.delete(vmId);
      this.announce();
    });
    this.provisioning.set(vmId, task);
  }

  /** Resolves once the VM's provisioning here (if any) has settled. */
  async provisioned(vmId: string): Promise<void> {
    const pending = this.provisioning.get(vmId);
    if (pending) await pending;
  }

  /** Records in the sidecar why the VM failed, so it is listed as Error until deleted. */
  async fail(sidecar: VmSidecar, error: unknown): Promise<void> {
    const step = error instanceof VmCreateError ? error.step : 'create';
    sidecar.error = `${step}: ${messageOf(error)}`;
    sidecar.host_ports = [];
    this.logger.error(`vm ${sidecar.vm_id} failed at the ${sidecar.error}`);
    await this.files.writeSidecar(sidecar).catch(() => undefined);
  }

  /** Tells the heartbeat a VM was created, settled or deleted here. */
  announce(): void {
    this.changed.next();
  }

  async stateOf(sidecar: VmSidecar): Promise<VmState> {
    const vmId = sidecar.vm_id;
    if (this.inProgress(vmId)) return VmState.Provisioning;
    if (sidecar.error !== null) return VmState.Error;
    // Never started and no provisioning here: an agent was stopped mid-provisioning.
    if (sidecar.started_at === null) return VmState.Error;
    return RUN_STATES[await this.driver.inspect(vmId, sidecar.driver)];
  }

  /**
   * The VMs that hold their RAM and vCPUs: being admitted or provisioned here, or with a live
   * process (running, or paused: its memory is still taken).
   */
  committed(sidecars: VmSidecar[], found: Map<string, FoundVm>): CommittedVm[] {
    return sidecars
      .filter(({ vm_id }) => this.inProgress(vm_id) || found.has(vm_id))
      .map((sidecar) => ({
        ramAllocMb: sidecar.ram_alloc_mb,
        vcpuCount: sidecar.vcpu_count,
        rssMb: found.get(sidecar.vm_id)?.rssMb ?? 0,
      }));
  }

  private async start(sidecar: VmSidecar): Promise<void> {
    const vmId = sidecar.vm_id;
    try {
      const started = await this.metrics.timeSpawn(this.startOrFallBack(sidecar));
      // Kept even if the write below fails, so a delete still stops what was started.
      sidecar.driver = started.record;
      sidecar.host_ports = started.hostPorts;
      sidecar.started_at = toRfc3339(this.clock.now());
      try {
        await this.files.writeSidecar(sidecar);
      } catch (error) {
        throw new VmCreateError('sidecar', messageOf(error));
      }
      this.failpoint.reached('after-pid-written', vmId);
      this.logger.log(`vm ${vmId} started: ${started.summary}`);
    } catch (error) {
      await this.fail(sidecar, error);
    }
  }

  /**
   * Starts the VM as planned; when the host's acceleration fails it (KVM present but failing),
   * stops whatever that start left and starts the VM again the driver's other way (TCG), says
   * so in the log and marks it in the sidecar (`accel_fallback`, and the driver's record).
   */
  private async startOrFallBack(sidecar: VmSidecar): Promise<StartedVm> {
    const spec = specOf(sidecar);
    try {
      return await this.driver.start(spec, sidecar.driver);
    } catch (error) {
      if (!(error instanceof VmAccelerationError)) throw error;
      this.logger.warn(
        `vm ${spec.vmId}: ${error.step}: ${error.message}; starting it again under ${error.instead}`,
      );
      await this.driver.stop(spec.vmId, sidecar.driver);
      sidecar.driver = error.fallback;
      sidecar.accel_fallback = `${error.step}: ${error.message}; started under ${error.instead}`;
      return this.driver.start(spec, error.fallback);
    }
  }
}

/** What the driver is asked to make of a VM. */
export function specOf(sidecar: VmSidecar): VmSpec {
  return {
    vmId: sidecar.vm_id,
    vmType: sidecar.vm_type,
    ramMb: sidecar.ram_alloc_mb,
    vcpuCount: sidecar.vcpu_count,
  };
}

export function toVmRecord(sidecar: VmSidecar, state: VmState): VmRecord {
  return {
    vm_id: sidecar.vm_id,
    vm_type: sidecar.vm_type,
    state,
    ram_alloc_mb: sidecar.ram_alloc_mb,
    vcpu_count: sidecar.vcpu_count,
    started_at: sidecar.started_at,
    tenant_id: sidecar.tenant_id,
    host_ports: sidecar.host_ports,
  };
}
