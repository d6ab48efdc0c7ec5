import { Injectable, Logger } from '@nestjs/common';
import { chmod, rename, rm } from 'node:fs/promises';
import { Clock } from '@app/daemon';
import {
  AgentRestoreRequest,
  CreateVmRequest,
  DesiredVmState,
  HostPort,
  MAX_VMS_PER_HEARTBEAT,
  SpawnVmRequest,
  VmRecord,
  VmState,
  capacityRefusal,
  checkPublishedPorts,
  rfc3339ToEpochNanos,
  toRfc3339,
} from '@app/fleet-domain';
import { VmHostConfig } from '../../config/vm-host.config';
import { HostFactsService } from '../../host-facts/host-facts.service';
import { CrashFailpoint } from '../life-cycle/crash-failpoint';
import { HostPorts } from '../ports/host-ports';
import { diskProblemOf } from './disk-problem';
import { VmDiskRoom } from './vm-disk-room';
import { SpawnKey, keptKey } from './idempotency-key';
import { VmLifecycle, specOf } from '../life-cycle/vm-lifecycle';
import { DriverRecord, VmDriver } from '../vm-driver';
import { PRIVATE_FILE_MODE, VmFiles, VmSidecar } from '../files/vm-files';
import { VmSidecars } from '../files/vm-sidecars';
import {
  IdempotencyKeyReusedError,
  SpawnDeadlinePassedError,
  VmCreateError,
  VmDiskError,
  VmDoesNotFitError,
  VmIdTakenError,
  messageOf,
} from '../vms.errors';

/** For the "accepted" log line: the forwards of a create that asked for ports (SSH is always there). */
function publishedText(request: CreateVmRequest, forwards: readonly HostPort[]): string {
  if (!request.ports?.length) return '';
  return `, ports ${forwards.map((port) => `${port.host_port}->${port.guest_port}/${port.protocol}`).join(' ')}`;
}

/**
 * How a restore makes the VM's disk: `make` writes the whole disk into `target` (a new file),
 * `from` says what it was made from (kept in the sidecar, logged).
 */
export interface RestoredDisk {
  from: string;
  make(target: string): Promise<void>;
  /**
   * A VM moved in (apps/vm-host/src/moves/): run once its files are made, its sidecar still
   * marked restoring (an agent killed meanwhile rolls it back). Resolves how it is left: `running`
   * (started by it, its sidecar saying so), `start` (started as a restore is) or `stopped`.
   */
  adopt?(sidecar: VmSidecar): Promise<'running' | 'start' | 'stopped'>;
}

const ADOPTED_STATES = {
  running: VmState.Running,
  start: VmState.Provisioning,
  stopped: VmState.Stopped,
} as const;

/** The lock key of admissions (vm ids never look like it). */
const ADMISSION = '<admission>';

/** The outcome of a spawn: a new VM, or the one an earlier spawn with its key made. */
export interface SpawnOutcome {
  vm: VmRecord;
  created: boolean;
}

/**
 * Admits new VMs, one at a time: answers a retried spawn with the VM its key made, refuses what
 * the node cannot hold (naming the numbers) or what a full disk cannot take (leaving nothing
 * behind), and otherwise accepts the VM once its files are made, then has it provisioned.
 */
@Injectable()
export class VmAdmissionService {
  private readonly logger = new Logger('Vms');

  constructor(
    private readonly files: VmFiles,
    private readonly sidecars: VmSidecars,
    private readonly lifecycle: VmLifecycle,
    private readonly driver: VmDriver,
    private readonly clock: Clock,
    private readonly hostFacts: HostFactsService,
    private readonly config: VmHostConfig,
    private readonly failpoint: CrashFailpoint,
    private readonly hostPorts: HostPorts,
    private readonly diskRoom: VmDiskRoom,
  ) {}

  /**
   * Admits the VM (state Provisioning) once its files are made, and starts it after answering.
   * With a key a spawn made before (within a day), it answers that VM and makes none.
   */
  async spawn(request: SpawnVmRequest, key?: SpawnKey): Promise<SpawnOutcome> {
    this.refuseIfLate(request);
    checkPublishedPorts(request.ports);
    return this.lifecycle.locks.run(ADMISSION, () => this.admit(request, key));
  }

  /**
   * Past its `deadline` by this agent's clock, a spawn is refused, nothing made: the controller
   * has stopped waiting, and may have asked another node. Checked on arrival and again just
   * before the id is taken, so a spawn queued behind other creates (or an agent frozen between
   * the two) cannot make a VM late.
   */
  private refuseIfLate(request: SpawnVmRequest): void {
    if (request.deadline === undefined) return;
    const nowMs = this.clock.wallNow();
    // Validated as RFC 3339 already; to the nanosecond, as the agent reads every stamp.
    if (BigInt(nowMs) * 1_000_000n <= (rfc3339ToEpochNanos(request.deadline) ?? 0n)) return;
    this.logger.warn(
      `vm ${request.vm_id ?? '(no id)'}: spawn refused, its deadline ${request.deadline} had passed (the agent was frozen or the request held up); nothing made`,
    );
    throw new SpawnDeadlinePassedError(request.deadline, nowMs);
  }

  private async admit(request: SpawnVmRequest, key?: SpawnKey): Promise<SpawnOutcome> {
    const sidecars = await this.sidecars.all();
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
        return {
          vm: this.lifecycle.recordOf(earlier, await this.lifecycle.stateOf(earlier)),
          created: false,
        };
      }
    }
    await this.checkCapacity(request, sidecars);
    const forwards: HostPort[] = await this.assignPorts(request, sidecars);
    const plan = await this.refusingDiskProblems('making the base image', () =>
      this.driver.plan({ preferKvm: request.prefer_kvm }),
    );
    await this.checkDiskRoom(request, sidecars);
    this.refuseIfLate(request);
    const vmId = await this.refusingDiskProblems('making the run folder', () =>
      this.takeVmId(request.vm_id),
    );
    return this.lifecycle.admitting(vmId, () =>
      this.accept(vmId, request, forwards, plan.record, plan.summary, key),
    );
  }

  /**
   * SSH and the create's ports on VM_WG_IP, none another VM here holds (running or stopped);
   * a host_port asked for that is taken is refused naming it, before anything is made.
   */
  private async assignPorts(request: SpawnVmRequest, sidecars: VmSidecar[]): Promise<HostPort[]> {
    try {
      return await this.hostPorts.assign(
        request.ports ?? [],
        sidecars.map((sidecar) => ({
          vm_id: sidecar.vm_id,
          ports: [...(sidecar.forwards ?? []), ...sidecar.host_ports],
        })),
        request.vm_id,
      );
    } catch (error) {
      this.logger.warn(`node ${this.config.nodeId} refused a VM: ${messageOf(error)}`);
      throw error;
    }
  }

  /** The controller's minted id (refused when taken here), or one of the agent's own without. */
  private async takeVmId(minted: string | undefined): Promise<string> {
    if (minted === undefined) return this.files.newVmId();
    if (await this.files.claimVmId(minted)) return minted;
    this.logger.warn(`node ${this.config.nodeId} refused a VM: vm_id ${minted} is already taken`);
    throw new VmIdTakenError(minted);
  }

  /** Writes the sidecar and makes the files; a disk problem leaves nothing of the VM behind. */
  private async accept(
    vmId: string,
    request: SpawnVmRequest,
    forwards: HostPort[],
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
      forwards,
      created_at: toRfc3339(this.clock.now()),
      started_at: null,
      error: null,
      driver: record,
      idempotency_key: key?.value ?? null,
      desired_state: DesiredVmState.Running,
      last_exit: null,
      ...(request.disk_gb === undefined || request.disk_gb === null
        ? {}
        : { disk_gb: request.disk_gb }),
      ...(request.deadline === undefined ? {} : { spawn_deadline: request.deadline }),
      ...(request.copies
        ? { copies: { count: request.copies.count, every_s: request.copies.every_s } }
        : {}),
    };
    try {
      this.failpoint.reached('before-sidecar', vmId);
      await this.files.writeSidecar(sidecar);
      this.failpoint.reached('after-sidecar', vmId);
      await this.driver.makeFiles(specOf(sidecar), record);
      if (sidecar.spawn_deadline !== undefined) {
        // Answered from here on: a create cut short after this is finished whatever the time.
        delete sidecar.spawn_deadline;
        await this.files.writeSidecar(sidecar);
      }
    } catch (error) {
      const problem = diskProblemOf(error);
      if (!problem && error instanceof VmCreateError) {
        // The disk is fine but a tool is not: listed as Error, as a failed start is.
        await this.lifecycle.fail(sidecar, error);
        this.lifecycle.announce();
        return { vm: this.lifecycle.recordOf(sidecar, VmState.Error), created: true };
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
      `vm ${vmId} accepted: ${request.vm_type}, ${request.ram_mb} MB, ${request.vcpu_count} vCPU${sidecar.disk_gb === undefined ? '' : `, ${sidecar.disk_gb} GiB disk`}, ${summary}${publishedText(request, forwards)}${sidecar.tenant_id ? `, tenant ${sidecar.tenant_id}` : ''}`,
    );
    this.lifecycle.provision(sidecar);
    this.lifecycle.announce();
    return { vm: this.lifecycle.recordOf(sidecar, VmState.Provisioning), created: true };
  }

  /**
   * Makes the VM `request.vm_id` from a copy, admitted as a create is (one at a time; RAM,
   * vCPUs and disk room judged the same way; refused with a 409 when the id is taken here): its
   * sidecar written first with `restoring` (the intent: an agent killed before the disk is whole
   * rolls it back, see resume), the disk written by `disk` into a partial file then renamed, the
   * seed made with the same id (so the guest sees the same instance), then started. Its ports:
   * the same host ports where free here (keep_host_ports), else new ones.
   */
  restore(request: AgentRestoreRequest, disk: RestoredDisk): Promise<SpawnOutcome> {
    return this.lifecycle.locks.run(ADMISSION, async () => {
      const sidecars = await this.sidecars.all();
      if (sidecars.some((sidecar) => sidecar.vm_id === request.vm_id)) {
        throw new VmIdTakenError(request.vm_id);
      }
      const wanted = { ...request, prefer_kvm: false };
      await this.checkCapacity(wanted, sidecars);
      const forwards = await this.hostPorts.keep(
        request.ports,
        sidecars.map((sidecar) => ({
          vm_id: sidecar.vm_id,
          ports: [...(sidecar.forwards ?? []), ...sidecar.host_ports],
        })),
        request.keep_host_ports,
        request.vm_id,
      );
      const plan = await this.refusingDiskProblems('making the base image', () =>
        this.driver.plan({ preferKvm: false }),
      );
      await this.checkDiskRoom(wanted, sidecars);
      const vmId = await this.refusingDiskProblems('making the run folder', () =>
        this.takeVmId(request.vm_id),
      );
      return this.lifecycle.admitting(vmId, () =>
        this.acceptRestore(vmId, request, forwards, plan.record, disk),
      );
    });
  }

  private async acceptRestore(
    vmId: string,
    request: AgentRestoreRequest,
    forwards: HostPort[],
    record: DriverRecord,
    disk: RestoredDisk,
  ): Promise<SpawnOutcome> {
    const sidecar: VmSidecar = {
      vm_id: vmId,
      vm_type: request.vm_type,
      tenant_id: request.tenant_id ?? null,
      ram_alloc_mb: request.ram_mb,
      vcpu_count: request.vcpu_count,
      host_ports: [],
      forwards,
      created_at: toRfc3339(this.clock.now()),
      started_at: null,
      error: null,
      driver: record,
      idempotency_key: null,
      desired_state: DesiredVmState.Running,
      last_exit: null,
      ...(request.disk_gb === undefined ? {} : { disk_gb: request.disk_gb }),
      // Its copy policy goes with it, so the restored VM is copied again from its new node.
      ...(request.copies
        ? { copies: { count: request.copies.count, every_s: request.copies.every_s } }
        : {}),
      restored_from: disk.from,
      restoring: true,
    };
    const partial = this.files.restoringDisk(vmId);
    let adopted: 'running' | 'start' | 'stopped' = 'start';
    try {
      await this.files.writeSidecar(sidecar);
      this.failpoint.reached('after-sidecar', vmId);
      await disk.make(partial);
      await chmod(partial, PRIVATE_FILE_MODE);
      await rename(partial, this.files.disk(vmId));
      this.failpoint.reached('after-disk', vmId);
      await this.driver.makeFiles(specOf(sidecar), record);
      adopted = disk.adopt ? await disk.adopt(sidecar) : 'start';
      delete sidecar.restoring;
      await this.files.writeSidecar(sidecar);
    } catch (error) {
      await rm(partial, { force: true }).catch(() => undefined);
      await this.files.removeAll(vmId).catch((cleanup: unknown) => {
        this.logger.error(`vm ${vmId}: could not remove its files: ${messageOf(cleanup)}`);
      });
      this.sidecars.forget(vmId);
      const problem = diskProblemOf(error);
      if (!problem) {
        this.logger.error(`vm ${vmId}: restore from ${disk.from} failed: ${messageOf(error)}`);
        throw error;
      }
      const refusal = new VmDiskError(this.files.root, problem, "making the restored VM's disk");
      this.logger.error(`vm ${vmId} restore refused: ${refusal.message}`);
      throw refusal;
    }
    this.logger.log(
      `vm ${vmId} restored from ${disk.from}: ${request.vm_type}, ${request.ram_mb} MB, ${request.vcpu_count} vCPU, ports ${forwards.map((port) => `${port.host_port}->${port.guest_port}/${port.protocol}`).join(' ')}${sidecar.tenant_id ? `, tenant ${sidecar.tenant_id}` : ''}; starting it`,
    );
    if (adopted === 'start') this.lifecycle.provision(sidecar);
    this.lifecycle.announce();
    // Its ports are fixed now (the start forwards exactly these): the answer names them.
    const vm = this.lifecycle.recordOf(sidecar, ADOPTED_STATES[adopted]);
    return { vm: { ...vm, host_ports: forwards }, created: true };
  }

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
    const refusal = await this.capacityRefusal(request.ram_mb, request.vcpu_count, sidecars);
    if (refusal) {
      this.logger.warn(`node ${this.config.nodeId} refused a VM: ${refusal}`);
      throw new VmDoesNotFitError(refusal);
    }
  }

  /**
   * Refuses, naming disk_gb and the node's disk room, a VM whose disk (at its virtual size)
   * does not fit beside every VM disk here (any state: a stopped VM keeps its disk).
   */
  private async checkDiskRoom(request: CreateVmRequest, sidecars: VmSidecar[]): Promise<void> {
    const diskGb = request.disk_gb ?? undefined;
    try {
      await this.diskRoom.checkSize(diskGb);
    } catch (error) {
      this.logger.warn(`node ${this.config.nodeId} refused a VM: ${messageOf(error)}`);
      throw error;
    }
    const refusal = await this.diskRoom.refusal({ diskGb }, sidecars);
    if (refusal) {
      this.logger.warn(`node ${this.config.nodeId} refused a VM: ${refusal}`);
      throw new VmDoesNotFitError(refusal);
    }
  }

  /**
   * Why the node cannot start this existing VM again now (its RAM and vCPUs beside every VM
   * committed, and its disk beside every other disk, as for a create), or undefined when it
   * can. Judged one at a time with admissions, so two starts or a start and a create never both
   * take the last room.
   */
  refusalToStart(sidecar: VmSidecar): Promise<string | undefined> {
    return this.lifecycle.locks.run(ADMISSION, async () => {
      const others = (await this.sidecars.all()).filter(({ vm_id }) => vm_id !== sidecar.vm_id);
      const capacity = await this.capacityRefusal(sidecar.ram_alloc_mb, sidecar.vcpu_count, others);
      if (capacity) return capacity;
      return this.diskRoom.refusal({ vmId: sidecar.vm_id, diskGb: sidecar.disk_gb }, others);
    });
  }

  private async capacityRefusal(
    ramMb: number,
    vcpuCount: number,
    sidecars: VmSidecar[],
  ): Promise<string | undefined> {
    const [host, found] = await Promise.all([
      this.hostFacts.capacity(),
      this.driver.find(sidecars.map((sidecar) => sidecar.vm_id)),
    ]);
    return capacityRefusal(
      { ramMb, vcpuCount },
      {
        memory: { totalMb: host.ram_total_mb, usedMb: host.ram_used_mb },
        cpuCores: host.cpu_cores,
        vcpuOvercommit: this.config.vcpuOvercommit,
      },
      this.lifecycle.committed(sidecars, found),
    );
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
}
