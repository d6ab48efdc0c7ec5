import { Injectable, Logger } from '@nestjs/common';
import { Subject } from 'rxjs';
import { Clock } from '@app/daemon';
import {
  CreateVmRequest,
  MAX_VMS_PER_HEARTBEAT,
  VmRecord,
  VmState,
  toRfc3339,
} from '@app/fleet-domain';
import { VmHostConfig, VmHostConfigError } from '../config/vm-host.config';
import { NodeVmsReport, NodeVmsSource, ReportedVm } from '../heartbeat/node-vms.source';
import { HostFactsService } from '../host-facts/host-facts.service';
import { HostMetrics } from '../metrics/host-metrics.service';
import { CrashFailpoint } from './crash-failpoint';
import { diskProblemOf } from './disk-problem';
import { SpawnKey, keptKey } from './idempotency-key';
import { KeyedMutex } from './keyed-mutex';
import { CommittedVm, capacityRefusal } from './vm-capacity';
import { DriverRecord, FoundVm, VmDriver, VmRunState, VmSpec } from './vm-driver';
import { VmFiles, VmSidecar } from './vm-files';
import {
  IdempotencyKeyReusedError,
  SidecarUnreadableError,
  VmCreateError,
  VmDiskError,
  VmDoesNotFitError,
  VmNotOnNodeError,
} from './vms.errors';

const RUN_STATES: Record<VmRunState, VmState> = {
  running: VmState.Running,
  stopped: VmState.Stopped,
  // Alive but not answering (yet): not known to run.
  unknown: VmState.Provisioning,
};

/** Lock keys of admissions, and of reconciliations (vm ids never look like these). */
const ADMISSION = '<admission>';
const RECONCILIATION = '<reconciliation>';

/** A record for a VM whose driver data is lost: the driver finds its processes by name alone. */
const NO_RECORD: DriverRecord = { kind: 'none' };

/** Stand-ins for sidecars that could not be read: never written back, never acted on. */
const STAND_INS = new WeakSet<VmSidecar>();

/** What is listed of a VM whose sidecar cannot be read: its id, state Error, and why. */
function standIn(vmId: string, why: string): VmSidecar {
  const sidecar: VmSidecar = {
    vm_id: vmId,
    vm_type: 'unknown',
    tenant_id: null,
    // Not known without the sidecar; the least the wire allows.
    ram_alloc_mb: 1,
    vcpu_count: 1,
    host_ports: [],
    created_at: toRfc3339(0),
    started_at: null,
    error: `${why}; its type, RAM and vCPUs are not known`,
    driver: NO_RECORD,
    idempotency_key: null,
  };
  STAND_INS.add(sidecar);
  return sidecar;
}

/** The outcome of a spawn: a new VM, or the one an earlier spawn with its key made. */
export interface SpawnOutcome {
  vm: VmRecord;
  created: boolean;
}

function sameRecord(a: DriverRecord, b: DriverRecord): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((key) => a[key] === b[key]);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * This node's VMs: admits them (refusing what the node cannot hold, answering a retried spawn
 * with the VM it made), provisions them after answering, reports them in every heartbeat,
 * destroys them. State is rebuilt from the sidecars and the driver each time it is asked, and
 * reconciled with the processes that really run, so it survives an agent killed at any moment.
 */
@Injectable()
export class VmsService extends NodeVmsSource {
  private readonly logger = new Logger('Vms');
  private readonly changed = new Subject<void>();
  readonly changes = this.changed.asObservable();
  /** VMs being admitted (files made, not yet answered) in this process. */
  private readonly admitting = new Set<string>();
  /** Provisioning under way in this process, by vm_id. */
  private readonly provisioning = new Map<string, Promise<void>>();
  /**
   * ADMISSION: one at a time, so capacity and keys are judged against every VM accepted
   * before. RECONCILIATION: one at a time; it never waits for an admission, so a slow disk
   * does not hold back heartbeats. A vm id: one destroy or adoption of that VM at a time.
   */
  private readonly locks = new KeyedMutex();
  /** Why each VM's sidecar could not be read, as last logged (one line per new reason). */
  private readonly unreadable = new Map<string, string>();

  constructor(
    private readonly files: VmFiles,
    private readonly driver: VmDriver,
    private readonly clock: Clock,
    private readonly hostFacts: HostFactsService,
    private readonly config: VmHostConfig,
    private readonly failpoint: CrashFailpoint,
    private readonly metrics: HostMetrics = new HostMetrics(),
  ) {
    super();
  }

  /**
   * Readies VM_DISK_DIR (created if missing) before the agent listens, then reconciles what a
   * previous agent left. Not writable, or unfit for the driver's files, it is a start-up error;
   * missing hypervisor tools only warn.
   */
  async prepare(): Promise<void> {
    try {
      this.driver.checkDiskDir();
      await this.files.prepare();
    } catch (error) {
      throw new VmHostConfigError(
        `VM_DISK_DIR ${this.files.root} is not usable: ${messageOf(error)}`,
      );
    }
    await this.driver.checkTools();
    await this.locks.run(RECONCILIATION, () => this.reconcile(true));
  }

  /**
   * Admits the VM (state Provisioning) once its files are made, and starts it after answering.
   * With a key a spawn made before (within a day), it answers that VM and makes none.
   */
  spawn(request: CreateVmRequest, key?: SpawnKey): Promise<SpawnOutcome> {
    return this.locks.run(ADMISSION, () => this.admit(request, key));
  }

  /** Every VM; their states are asked of the driver all at once, so one slow VM costs one wait. */
  async list(): Promise<VmRecord[]> {
    const sidecars = await this.sidecars();
    const states = await Promise.all(sidecars.map((sidecar) => this.stateOf(sidecar)));
    return sidecars.map((sidecar, index) => toVmRecord(sidecar, states[index]));
  }

  /**
   * Every VM for the heartbeat, after reconciling with the processes that run, with the
   * Idempotency-Key each was made with (while kept), and what each committed VM holds.
   */
  async report(): Promise<NodeVmsReport> {
    const { sidecars, found } = await this.locks.run(RECONCILIATION, () => this.reconcile(false));
    // All at once: each state may wait a QMP timeout, and the heartbeat waits for them all.
    const states = await Promise.all(sidecars.map((sidecar) => this.stateOf(sidecar)));
    const nowMs = this.clock.now();
    const vms: ReportedVm[] = sidecars.map((sidecar, index) => {
      const key = keptKey(sidecar, nowMs);
      return {
        ...toVmRecord(sidecar, states[index]),
        ...(key ? { idempotency_key: key.value } : {}),
      };
    });
    return { vms, committed: this.committed(sidecars, found) };
  }

  /**
   * Stops every process of the VM (also one its sidecar has no pid of) and removes its runtime
   * files. Throws VmNotOnNodeError for a VM this node does not have, so a second call is a 404.
   */
  async destroy(vmId: string): Promise<void> {
    await this.locks.run(vmId, async () => {
      const pending = this.provisioning.get(vmId);
      if (pending) await pending;
      const sidecar = await this.sidecarOf(vmId);
      if (!sidecar) throw new VmNotOnNodeError(vmId);
      await this.driver.stop(vmId, sidecar.driver);
      await this.files.removeRuntime(vmId);
      this.unreadable.delete(vmId);
      this.logger.log(`vm ${vmId} destroyed (disk ${this.files.disk(vmId)} kept)`);
    });
    this.changed.next();
  }

  private async admit(request: CreateVmRequest, key?: SpawnKey): Promise<SpawnOutcome> {
    const sidecars = await this.sidecars();
    if (key) {
      const nowMs = this.clock.now();
      const earlier = sidecars.find((sidecar) => keptKey(sidecar, nowMs)?.keyHash === key.keyHash);
      if (earlier && earlier.idempotency_key !== key.value) {
        throw new IdempotencyKeyReusedError(
          `Idempotency-Key was used for another request (vm ${earlier.vm_id}): a retry must repeat the request it was first sent with`,
        );
      }
      if (earlier) {
        this.logger.log(`vm ${earlier.vm_id} answered again for a retried spawn (same key)`);
        return { vm: toVmRecord(earlier, await this.stateOf(earlier)), created: false };
      }
    }
    await this.checkCapacity(request, sidecars);
    const plan = await this.refusingDiskProblems('making the base image', () =>
      this.driver.plan({ preferKvm: request.prefer_kvm }),
    );
    const vmId = await this.refusingDiskProblems('making the run folder', () =>
      this.files.newVmId(),
    );
    this.admitting.add(vmId);
    try {
      return await this.accept(vmId, request, plan.record, plan.summary, key);
    } finally {
      this.admitting.delete(vmId);
    }
  }

  /** Writes the sidecar and makes the files; a disk problem leaves nothing of the VM behind. */
  private async accept(
    vmId: string,
    request: CreateVmRequest,
    record: DriverRecord,
    summary: string,
    key?: SpawnKey,
  ): Promise<SpawnOutcome> {
    const sidecar: VmSidecar = {
      vm_id: vmId,
      vm_type: request.vm_type,
      tenant_id: request.tenant_id ?? null,
      ram_alloc_mb: request.ram_mb,
      vcpu_count: request.vcpu_count,
      host_ports: [],
      created_at: toRfc3339(this.clock.now()),
      started_at: null,
      error: null,
      driver: record,
      idempotency_key: key?.value ?? null,
    };
    const spec = specOf(sidecar);
    try {
      await this.files.writeSidecar(sidecar);
      this.failpoint.reached('after-sidecar', vmId);
      await this.driver.makeFiles(spec, record);
    } catch (error) {
      const problem = diskProblemOf(error);
      if (!problem && error instanceof VmCreateError) {
        // The disk is fine but a tool is not: listed as Error, as a failed start is.
        await this.recordFailure(sidecar, error);
        this.changed.next();
        return { vm: toVmRecord(sidecar, VmState.Error), created: true };
      }
      await this.files.removeAll(vmId).catch((cleanup: unknown) => {
        this.logger.error(`vm ${vmId}: could not remove its files: ${messageOf(cleanup)}`);
      });
      if (!problem) throw error;
      const during =
        error instanceof VmCreateError ? `making the VM's ${error.step}` : 'writing the sidecar';
      const refusal = new VmDiskError(this.files.root, problem, during);
      this.logger.error(`vm ${vmId} refused: ${refusal.message}`);
      throw refusal;
    }
    this.logger.log(
      `vm ${vmId} accepted: ${request.vm_type}, ${request.ram_mb} MB, ${request.vcpu_count} vCPU, ${summary}${sidecar.tenant_id ? `, tenant ${sidecar.tenant_id}` : ''}`,
    );
    const task = this.provision(sidecar, spec).finally(() => {
      this.provisioning.delete(vmId);
      this.changed.next();
    });
    this.provisioning.set(vmId, task);
    this.changed.next();
    return { vm: toVmRecord(sidecar, VmState.Provisioning), created: true };
  }

  /**
   * Refuses, naming the numbers, a VM the node cannot hold beside the VMs it has: also one
   * more than a heartbeat may carry (any state counts), which the controller would refuse.
   */
  private async checkCapacity(request: CreateVmRequest, sidecars: VmSidecar[]): Promise<void> {
    if (sidecars.length >= MAX_VMS_PER_HEARTBEAT) {
      const refusal = `this node holds ${sidecars.length} VMs, the most a heartbeat may report (limit ${MAX_VMS_PER_HEARTBEAT}); delete one first`;
      this.logger.warn(`node ${this.config.nodeId} refused a VM: ${refusal}`);
      throw new VmDoesNotFitError(refusal);
    }
    const [host, found] = await Promise.all([
      this.hostFacts.capacity(),
      this.driver.find(sidecars.map((sidecar) => sidecar.vm_id)),
    ]);
    const refusal = capacityRefusal(
      { ramMb: request.ram_mb, vcpuCount: request.vcpu_count },
      {
        memory: { totalMb: host.ram_total_mb, usedMb: host.ram_used_mb },
        cpuCores: host.cpu_cores,
        vcpuOvercommit: this.config.vcpuOvercommit,
      },
      this.committed(sidecars, found),
    );
    if (refusal) {
      this.logger.warn(`node ${this.config.nodeId} refused a VM: ${refusal}`);
      throw new VmDoesNotFitError(refusal);
    }
  }

  /** Runs a step that writes in VM_DISK_DIR, turning a full or unwritable folder into a refusal. */
  private async refusingDiskProblems<T>(during: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      const problem = diskProblemOf(error);
      if (!problem) throw error;
      const refusal = new VmDiskError(this.files.root, problem, during);
      this.logger.error(`node ${this.config.nodeId} refused a VM: ${refusal.message}`);
      throw refusal;
    }
  }

  /**
   * The VMs that hold their RAM and vCPUs: being admitted or provisioned here, or with a live
   * process (running, or paused: its memory is still taken).
   */
  private committed(sidecars: VmSidecar[], found: Map<string, FoundVm>): CommittedVm[] {
    return sidecars
      .filter(
        ({ vm_id }) =>
          this.admitting.has(vm_id) || this.provisioning.has(vm_id) || found.has(vm_id),
      )
      .map((sidecar) => ({
        ramAllocMb: sidecar.ram_alloc_mb,
        vcpuCount: sidecar.vcpu_count,
        rssMb: found.get(sidecar.vm_id)?.rssMb ?? 0,
      }));
  }

  /**
   * Makes the sidecars agree with the processes that run: a live process of a VM is adopted
   * (its pid recorded, also when the old agent was killed before writing it); a VM never
   * started and not provisioning here is marked Error. At start-up, a run folder without a
   * sidecar (an agent killed while accepting) has any process stopped and is removed.
   */
  private async reconcile(
    startUp: boolean,
  ): Promise<{ sidecars: VmSidecar[]; found: Map<string, FoundVm> }> {
    const vmIds = await this.files.listVmIds();
    const found = await this.driver.find(vmIds);
    const sidecars: VmSidecar[] = [];
    for (const vmId of vmIds) {
      // Being admitted, provisioned or destroyed here: its owner writes the sidecar.
      const owned =
        this.admitting.has(vmId) || this.provisioning.has(vmId) || this.locks.busy(vmId);
      const sidecar = owned
        ? await this.sidecarOf(vmId)
        : await this.locks.run(vmId, () => this.settle(vmId, found.get(vmId), startUp));
      if (sidecar) sidecars.push(sidecar);
    }
    return { sidecars, found };
  }

  private async settle(
    vmId: string,
    live: FoundVm | undefined,
    startUp: boolean,
  ): Promise<VmSidecar | undefined> {
    const sidecar = await this.sidecarOf(vmId);
    // Unreadable: kept as it is, its process (if any) left running; only a delete acts on it.
    if (sidecar && STAND_INS.has(sidecar)) return sidecar;
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
      await this.writeSettled(sidecar);
      this.logger.warn(`vm ${vmId}: adopted its running process (${live.summary})`);
    } else if (sidecar.started_at === null && sidecar.error === null) {
      sidecar.error = 'agent stopped before the VM was started';
      await this.writeSettled(sidecar);
      this.logger.error(`vm ${vmId} failed: ${sidecar.error}; listed as Error until deleted`);
    }
    return sidecar;
  }

  private async writeSettled(sidecar: VmSidecar): Promise<void> {
    await this.files.writeSidecar(sidecar).catch((error: unknown) => {
      this.logger.error(`vm ${sidecar.vm_id}: could not update its sidecar: ${messageOf(error)}`);
    });
  }

  private async provision(sidecar: VmSidecar, spec: VmSpec): Promise<void> {
    const vmId = sidecar.vm_id;
    try {
      const started = await this.metrics.timeSpawn(this.driver.start(spec, sidecar.driver));
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
      await this.recordFailure(sidecar, error);
    }
  }

  private async recordFailure(sidecar: VmSidecar, error: unknown): Promise<void> {
    const step = error instanceof VmCreateError ? error.step : 'create';
    sidecar.error = `${step}: ${messageOf(error)}`;
    sidecar.host_ports = [];
    this.logger.error(`vm ${sidecar.vm_id} failed at the ${sidecar.error}`);
    await this.files.writeSidecar(sidecar).catch(() => undefined);
  }

  private async sidecars(): Promise<VmSidecar[]> {
    const sidecars: VmSidecar[] = [];
    for (const vmId of await this.files.listVmIds()) {
      const sidecar = await this.sidecarOf(vmId);
      if (sidecar) sidecars.push(sidecar);
    }
    return sidecars;
  }

  /**
   * The VM's sidecar, undefined when it has none; one that cannot be read gives a stand-in
   * listed as Error (logged once per reason), so the VM is neither dropped nor its files removed.
   */
  private async sidecarOf(vmId: string): Promise<VmSidecar | undefined> {
    try {
      const sidecar = await this.files.readSidecar(vmId);
      this.unreadable.delete(vmId);
      return sidecar;
    } catch (error) {
      if (!(error instanceof SidecarUnreadableError)) throw error;
      if (this.unreadable.get(vmId) !== error.message) {
        this.unreadable.set(vmId, error.message);
        this.logger.error(
          `${error.message}: kept and listed as Error, its process and files left alone until it is deleted`,
        );
      }
      return standIn(vmId, `sidecar unreadable (${error.reason})`);
    }
  }

  private async stateOf(sidecar: VmSidecar): Promise<VmState> {
    const vmId = sidecar.vm_id;
    if (this.admitting.has(vmId) || this.provisioning.has(vmId)) return VmState.Provisioning;
    if (sidecar.error !== null) return VmState.Error;
    // Never started and no provisioning here: an agent was stopped mid-provisioning.
    if (sidecar.started_at === null) return VmState.Error;
    return RUN_STATES[await this.driver.inspect(vmId, sidecar.driver)];
  }
}

function specOf(sidecar: VmSidecar): VmSpec {
  return {
    vmId: sidecar.vm_id,
    vmType: sidecar.vm_type,
    ramMb: sidecar.ram_alloc_mb,
    vcpuCount: sidecar.vcpu_count,
  };
}

function toVmRecord(sidecar: VmSidecar, state: VmState): VmRecord {
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
