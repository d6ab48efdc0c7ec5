import { Injectable, Logger } from '@nestjs/common';
import { chmod, rename, rm } from 'node:fs/promises';
import { Clock } from '@app/daemon';
import {
  AgentRestoreRequest,
  CreateVmRequest,
  DesiredVmState,
  HostPort,
  SpawnVmRequest,
  VmRecord,
  VmState,
  checkPublishedPorts,
  rfc3339ToEpochNanos,
  toRfc3339,
} from '@app/fleet-domain';
import { VmHostConfig } from '../../config/vm-host.config';
import { HostFactsService } from '../../host-facts/host-facts.service';
import { CrashFailpoint } from '../failpoints/crash-failpoint';
import { HostPorts } from '../ports/host-ports';
import { diskProblemOf } from './disk-problem';
import { VmDiskRoom } from './vm-disk-room';
import { VmRoomChecks } from './vm-room-checks';
import { CutShortCreates } from './cut-short-creates';
import { SpawnKey, keptKey } from './idempotency-key';
import { VmLifeCycles, specOf } from '../life-cycle/vm-life-cycles';
import { DriverRecord, VmDriver } from '../vm-driver';
import { PRIVATE_FILE_MODE, VmFiles } from '../files/vm-files';
import { VmSidecar } from '../files/vm-sidecar';
import { VmSidecars } from '../files/vm-sidecars';
import {
  IdempotencyKeyReusedError,
  SpawnDeadlinePassedError,
  VmCreateError,
  VmDiskError,
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
  /** What the node has room for: ports, RAM and vCPUs, disk. */
  private readonly room: VmRoomChecks;
  private readonly cutShort: CutShortCreates;

  constructor(
    private readonly files: VmFiles,
    private readonly sidecars: VmSidecars,
    private readonly lifecycle: VmLifeCycles,
    private readonly driver: VmDriver,
    private readonly clock: Clock,
    private readonly hostFacts: HostFactsService,
    private readonly config: VmHostConfig,
    private readonly failpoint: CrashFailpoint,
    private readonly hostPorts: HostPorts,
    private readonly diskRoom: VmDiskRoom,
  ) {
    this.room = new VmRoomChecks(
      hostFacts,
      driver,
      lifecycle,
      diskRoom,
      hostPorts,
      config,
      this.logger,
    );
    this.cutShort = new CutShortCreates(files, sidecars, lifecycle, driver, clock, this.logger);
  }

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
    await this.room.checkCapacity(request, sidecars);
    const forwards: HostPort[] = await this.room.assignPorts(request, sidecars);
    const plan = await this.refusingDiskProblems('making the base image', () =>
      this.driver.plan({ preferKvm: request.prefer_kvm }),
    );
    await this.room.checkDiskRoom(request, sidecars);
    this.refuseIfLate(request);
    const vmId = await this.refusingDiskProblems('making the run folder', () =>
      this.takeVmId(request.vm_id),
    );
    return this.lifecycle.admitting(vmId, () =>
      this.accept(vmId, request, forwards, plan.record, plan.summary, key),
    );
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
      await this.room.checkCapacity(wanted, sidecars);
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
      await this.room.checkDiskRoom(wanted, sidecars);
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
      if (adopted === 'running') this.failpoint.reached('after-move-take-over', vmId);
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
   * Finishes, in the background, a create an agent was killed in after writing its sidecar and
   * before the VM's first start, or rolls it back (see CutShortCreates).
   */
  resume(sidecar: VmSidecar): void {
    this.cutShort.resume(sidecar);
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
      const capacity = await this.room.capacityRefusal(
        sidecar.ram_alloc_mb,
        sidecar.vcpu_count,
        others,
      );
      if (capacity) return capacity;
      return this.diskRoom.refusal({ vmId: sidecar.vm_id, diskGb: sidecar.disk_gb }, others);
    });
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
