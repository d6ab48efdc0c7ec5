import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { Subject } from 'rxjs';
import { Clock } from '@app/daemon';
import {
  CommittedVm,
  HYPERVISOR_OVERHEAD_MB,
  DesiredVmState,
  HostPort,
  VmLifeCycle,
  VmOperation,
  VmRecord,
  VmState,
  toRfc3339,
} from '@app/fleet-domain';
import { VmHostConfig } from '../../config/vm-host.config';
import { HostMetrics } from '../../metrics/host-metrics.service';
import { CrashFailpoint } from '../failpoints/crash-failpoint';
import { KeyedMutex } from './keyed-mutex';
import { FoundVm, VmDriver } from '../vm-driver';
import { VmFiles } from '../files/vm-files';
import { VmSidecar } from '../files/vm-sidecar';
import { VmRestarts } from './vm-restarts';
import { VmPhases } from './vm-phases';
import { RUN_STATES, bounded, specOf, toVmRecord } from './vm-record';

// Where the services that start VMs and list them took these from.
export { specOf, toVmRecord };
import {
  OPERATION_MOVE,
  PHASE_OPERATION,
  VM_TRANSITION_HOOKS,
  VmMove,
  VmMoveOperation,
  VmPhase,
  VmTransitionHook,
} from './vm-transitions';
import { VmCreateError, VmPortTakenError, messageOf } from '../vms.errors';

/**
 * Each VM's state and its moves in this process. The work under way on each VM is its phase
 * (`vm-transitions.ts`), moved only through `move`, which the table of legal moves checks and
 * the hooks hear of. A VM is Provisioning while it is admitted here and then started after the
 * answer; once started it is what the driver sees (Running, Stopped, Provisioning while it
 * does not answer yet); a failed start, or one an earlier agent never made, is Error with the
 * reason in its sidecar. The locks every VM service shares live here too, so they agree on who
 * owns a VM at any moment.
 */
@Injectable()
export class VmLifeCycles {
  private readonly logger = new Logger('Vms');
  private readonly changed = new Subject<void>();
  /** Emits when a VM was accepted, settled or deleted here. */
  readonly changes = this.changed.asObservable();
  /** Each VM's phase, changed by `move` alone; the agent's own memories are its first hook. */
  private readonly phases: VmPhases;
  /** Provisioning of a new VM under way in this process, by vm_id (waited for by a delete). */
  private readonly provisioning = new Map<string, Promise<void>>();
  /** Starts of existing VMs (after a stop, a crash, a reboot) waiting or under way, by vm_id. */
  private readonly starting = new Map<string, Promise<void>>();
  /**
   * VMs whose last start failed because one of their host ports was taken: listed Error (with
   * that reason) rather than Stopped, while starts are tried again at the backoff's pace.
   */
  private readonly portBlocked = new Set<string>();
  /**
   * VMs their hypervisor paused on a failed write (VM_DISK_DIR full), as last inspected: listed
   * Error with the reason, resumed once there is room again (DiskFullPauses).
   */
  private readonly pausedOnDiskFull = new Set<string>();
  /** The restart policy's memory of each VM (failures in a row, the next start). */
  readonly restarts = new VmRestarts();
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
    private readonly config?: VmHostConfig,
    @Optional()
    @Inject(VM_TRANSITION_HOOKS)
    hooks: readonly VmTransitionHook[] = [],
  ) {
    const forgetDeleted = { name: 'forget-deleted', moved: (move: VmMove) => this.forget(move) };
    this.phases = new VmPhases([forgetDeleted, ...hooks]);
  }

  /** The work under way on the VM here (idle: none). */
  phaseOf(vmId: string): VmPhase {
    return this.phases.of(vmId);
  }

  /** True when the table lets the operation move the VM from its phase now. */
  mayMove(vmId: string, operation: VmMoveOperation): boolean {
    return this.phases.may(vmId, operation);
  }

  /** Moves the VM's phase as the table allows (see VmPhases.move). */
  move(vmId: string, operation: VmMoveOperation): VmPhase {
    return this.phases.move(vmId, operation);
  }

  private settle(vmId: string, phase: VmPhase): void {
    this.phases.settle(vmId, phase);
  }

  /** The first hook: a deleted VM's memories here (restarts, blocked ports, pauses) end with it. */
  private forget({ vmId, from, operation }: VmMove): void {
    if (from !== VmPhase.Deleting || operation !== 'settle') return;
    this.restarts.forget(vmId);
    this.portBlocked.delete(vmId);
    this.pausedOnDiskFull.delete(vmId);
  }

  /** Runs a delete's work as the VM's phase (after its provisioning, under its lock). */
  async deleting<T>(vmId: string, work: () => Promise<T>): Promise<T> {
    this.move(vmId, 'delete');
    try {
      return await work();
    } finally {
      this.settle(vmId, VmPhase.Deleting);
    }
  }

  /**
   * Notes that the VM's process ended without an operator asking (a reconciliation's move
   * `crash`, idle VMs only) for the restart policy; see `VmRestarts.exited`.
   */
  crashed(vmId: string, why: string, nowMs: number, counts: boolean): void {
    this.move(vmId, 'crash');
    this.restarts.exited(vmId, why, nowMs, counts);
  }

  /** The VMs paused on a full disk when last inspected, of these. */
  pausedOnFullDisk(vmIds: readonly string[]): string[] {
    return vmIds.filter((vmId) => this.pausedOnDiskFull.has(vmId));
  }

  /** Runs the admission of a VM: Provisioning, and committed, until it is answered. */
  async admitting<T>(vmId: string, admission: () => Promise<T>): Promise<T> {
    this.move(vmId, 'admit');
    try {
      return await admission();
    } finally {
      this.settle(vmId, VmPhase.Admitting);
    }
  }

  /** True while this process admits or provisions a new VM. */
  beingCreated(vmId: string): boolean {
    const phase = this.phaseOf(vmId);
    return phase === VmPhase.Admitting || phase === VmPhase.Provisioning;
  }

  /**
   * True while this process admits, provisions or starts the VM (listed Provisioning): its
   * sidecar is theirs to write.
   */
  inProgress(vmId: string): boolean {
    return this.beingCreated(vmId) || this.phaseOf(vmId) === VmPhase.Starting;
  }

  /**
   * True while any work here (admission, provisioning, a start, an operator's stop or restart, a
   * destroy, an adoption) holds the VM.
   */
  owned(vmId: string): boolean {
    return this.phaseOf(vmId) !== VmPhase.Idle || this.locks.busy(vmId);
  }

  /** The operation under way on the VM here, if any. */
  operationOf(vmId: string): VmOperation | null {
    return PHASE_OPERATION[this.phaseOf(vmId)];
  }

  /** Runs an operator's stop or restart in the background; announces the change once it ends. */
  operate(vmId: string, operation: VmOperation, work: () => Promise<void>): void {
    const phase = this.move(vmId, OPERATION_MOVE[operation]);
    void work()
      .catch((error: unknown) => {
        this.logger.error(`vm ${vmId}: ${operation} failed: ${messageOf(error)}`);
      })
      .finally(() => {
        this.settle(vmId, phase);
        this.announce();
      });
  }

  /**
   * Marks the VM starting (listed Provisioning, owned) at once and runs the start given when it
   * may; the mark ends, and the change is announced, once the start settled.
   */
  startInBackground(vmId: string, start: () => Promise<void>): void {
    const phase = this.move(vmId, 'start');
    const task = start()
      .catch((error: unknown) => {
        this.logger.error(`vm ${vmId}: start failed: ${messageOf(error)}`);
      })
      .finally(() => {
        if (this.starting.get(vmId) === task) this.starting.delete(vmId);
        // A start asked during a delete left the phase Deleting: the delete ends it.
        if (phase === VmPhase.Starting) this.settle(vmId, phase);
        this.announce();
      });
    this.starting.set(vmId, task);
  }

  /** Resolves once the VM's start here (if any) has settled. */
  async started(vmId: string): Promise<void> {
    const pending = this.starting.get(vmId);
    if (pending) await pending;
  }

  /**
   * Starts an accepted VM in the background; announces the change once it settles. `makeFiles`,
   * for a create an agent was killed in, makes the VM's files first; false: it rolled the VM
   * back (nothing is left to start).
   */
  provision(sidecar: VmSidecar, makeFiles?: () => Promise<boolean>): void {
    const vmId = sidecar.vm_id;
    this.move(vmId, 'provision');
    const task = this.start(sidecar, makeFiles).finally(() => {
      this.provisioning.delete(vmId);
      this.settle(vmId, VmPhase.Provisioning);
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
    const run = await this.driver.inspect(vmId, sidecar.driver);
    if (run === 'io-error') this.notePausedOnDiskFull(vmId);
    else this.pausedOnDiskFull.delete(vmId);
    const state = RUN_STATES[run];
    // It should run but cannot: a host port of its own is taken (the reason names it).
    if (
      state === VmState.Stopped &&
      sidecar.desired_state === DesiredVmState.Running &&
      this.portBlocked.has(vmId)
    ) {
      return VmState.Error;
    }
    // Its process ended while it should run, again and again: a crash loop, not a stop.
    if (
      state === VmState.Stopped &&
      sidecar.desired_state === DesiredVmState.Running &&
      this.restarts.crashLooping(vmId)
    ) {
      return VmState.Error;
    }
    return state;
  }

  /** Seen paused on a full disk: said once per pause, counted in the metrics. */
  private notePausedOnDiskFull(vmId: string): void {
    if (this.pausedOnDiskFull.has(vmId)) return;
    this.pausedOnDiskFull.add(vmId);
    this.metrics.countDiskFullPause();
    this.logger.error(
      `vm ${vmId}: paused by its hypervisor on a failed write: VM_DISK_DIR on node ${this.config?.nodeId ?? '(this node)'} is full; listed Error, resumed once there is room`,
    );
  }

  /** Resumed (or gone): no longer listed paused. */
  resumedFromDiskFull(vmId: string): void {
    this.pausedOnDiskFull.delete(vmId);
  }

  /** The VM as answers and heartbeats show it, with the accelerator it (last) ran under. */
  recordOf(sidecar: VmSidecar, state: VmState): VmRecord {
    const accel = sidecar.started_at === null ? null : this.driver.accel(sidecar.driver);
    return toVmRecord(sidecar, state, accel);
  }

  /** The VM's life cycle as operators see it: its state, what was asked, and why they differ. */
  lifeCycleOf(sidecar: VmSidecar, state: VmState): VmLifeCycle {
    const vmId = sidecar.vm_id;
    const track = this.restarts.of(vmId);
    const nowMs = this.clock.now();
    const loop =
      this.restarts.crashLooping(vmId) && state === VmState.Error
        ? `failed ${track.failures} times in a row${track.reason ? `; last: ${track.reason}` : ''}`
        : null;
    const paused =
      state === VmState.Error && this.pausedOnDiskFull.has(vmId)
        ? `paused: disk full on ${this.config?.nodeId ?? 'this node'} (VM_DISK_DIR has no room for its writes; resumed once it has)`
        : null;
    const reason =
      sidecar.error ?? paused ?? loop ?? (state === VmState.Running ? null : track.reason);
    return {
      vm_id: vmId,
      state,
      desired_state: sidecar.desired_state,
      operation: this.operationOf(vmId),
      restart_count: track.failures,
      last_exit: bounded(sidecar.last_exit),
      reason: bounded(reason),
      next_start_at:
        track.nextStartAtMs === null
          ? null
          : toRfc3339(this.clock.wallNow() + Math.max(0, track.nextStartAtMs - nowMs)),
    };
  }

  /**
   * The VMs that hold their RAM and vCPUs: being admitted or provisioned here, or with a live
   * process (running, or paused: its memory is still taken).
   */
  committed(sidecars: VmSidecar[], found: Map<string, FoundVm>): CommittedVm[] {
    return sidecars
      .filter(({ vm_id }) => this.inProgress(vm_id) || found.has(vm_id))
      .map((sidecar) => {
        const vm: CommittedVm = {
          ramAllocMb: sidecar.ram_alloc_mb,
          vcpuCount: sidecar.vcpu_count,
          rssMb: found.get(sidecar.vm_id)?.rssMb ?? 0,
        };
        // Its hypervisor's own overhead, when not the usual one (TCG's translation cache).
        const overheadMb = this.driver.overheadMb(sidecar.driver);
        if (overheadMb !== HYPERVISOR_OVERHEAD_MB) vm.overheadMb = overheadMb;
        return vm;
      });
  }

  private async start(sidecar: VmSidecar, makeFiles?: () => Promise<boolean>): Promise<void> {
    try {
      if (makeFiles && !(await makeFiles())) return;
      await this.launch(sidecar);
    } catch (error) {
      await this.fail(sidecar, error);
    }
  }

  /**
   * Starts the VM from its files (a new one, or one started again from its own disk, keeping
   * its host ports where free) and writes down what runs; throws VmCreateError when it did not
   * start. Its sidecar records the start; the restart policy hears of it.
   */
  async launch(sidecar: VmSidecar, keepPorts: readonly HostPort[] = []): Promise<void> {
    const vmId = sidecar.vm_id;
    const started = await this.metrics
      .timeSpawn(this.driver.start(specOf(sidecar), sidecar.driver, keepPorts))
      .catch((error: unknown) => {
        if (error instanceof VmPortTakenError) this.portBlocked.add(vmId);
        throw error;
      });
    this.portBlocked.delete(vmId);
    // Kept even if the write below fails, so a delete still stops what was started.
    sidecar.driver = started.record;
    // Describes this start alone: a clean start under KVM clears an earlier start's fallback.
    if (started.accelFallback === undefined) delete sidecar.accel_fallback;
    else sidecar.accel_fallback = started.accelFallback;
    sidecar.host_ports = started.hostPorts;
    sidecar.started_at = toRfc3339(this.clock.now());
    sidecar.error = null;
    this.restarts.started(vmId, this.clock.now());
    try {
      await this.files.writeSidecar(sidecar);
    } catch (error) {
      throw new VmCreateError('sidecar', messageOf(error));
    }
    this.failpoint.reached('after-pid-written', vmId);
    this.logger.log(`vm ${vmId} started: ${started.summary}`);
  }
}
