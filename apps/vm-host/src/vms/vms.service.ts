import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { mkdir, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Observable } from 'rxjs';
import { Clock } from '@app/daemon';
import {
  DesiredVmState,
  DiskRoom,
  HeartbeatDiskRoom,
  ID_PATTERN,
  SpawnVmRequest,
  VmRecord,
} from '@app/fleet-domain';
import { VmHostConfigError } from '../config/vm-host.config';
import { SpawnKey, keptKey } from './admission/idempotency-key';
import { NodeVmsReport, NodeVmsSource, ReportedVm } from './node-vms.source';
import { SpawnOutcome, VmAdmissionService } from './admission/vm-admission.service';
import { VmDiskRoom } from './admission/vm-disk-room';
import { VmDriver } from './vm-driver';
import { PRIVATE_DIR_MODE, VmFiles } from './files/vm-files';
import { VmLifeCycles } from './life-cycle/vm-life-cycles';
import { VmReconciliationService } from './reconciliation/vm-reconciliation.service';
import { VmSidecars } from './files/vm-sidecars';
import { DeletedDisks } from './files/deleted-disks.service';
import { VmNotOnNodeError, messageOf } from './vms.errors';
import { VmFencing } from './fencing/vm-fencing.service';

/**
 * This node's VMs, as the agent's API and its heartbeat see them: admits them (VmAdmissionService),
 * lists them, reports them in every heartbeat after reconciling (VmReconciliationService),
 * destroys them. State is rebuilt from the sidecars and the driver each time it is asked, so
 * it survives an agent killed at any moment.
 */
@Injectable()
export class VmsService extends NodeVmsSource implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Vms');
  readonly changes: Observable<void>;

  constructor(
    private readonly files: VmFiles,
    private readonly sidecars: VmSidecars,
    private readonly lifecycle: VmLifeCycles,
    private readonly admission: VmAdmissionService,
    private readonly reconciliation: VmReconciliationService,
    private readonly driver: VmDriver,
    private readonly clock: Clock,
    private readonly deletedDisks: DeletedDisks,
    private readonly diskRoom: VmDiskRoom,
    private readonly fencing: VmFencing,
  ) {
    super();
    this.changes = lifecycle.changes;
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
    // A remembered lease holds protected VMs before reconciliation would start them.
    await this.fencing.prepare();
    await this.reconciliation.recover();
    await this.deletedDisks.recover();
  }

  /**
   * Admits the VM (state Provisioning) once its files are made, and starts it after answering.
   * With a key a spawn made before (within a day), it answers that VM and makes none. Past its
   * `deadline` by this agent's clock, it is refused before anything is looked at or made: the
   * controller has stopped waiting, and may have asked another node.
   */
  spawn(request: SpawnVmRequest, key?: SpawnKey): Promise<SpawnOutcome> {
    return this.admission.spawn(request, key);
  }

  /**
   * How many VMs that should run failed 3 or more times in a row since they last ran steadily
   * (10 min), whatever they are now: a VM that boots and crashes again is Provisioning or
   * Running part of the time, and must still count.
   */
  async crashLooping(): Promise<number> {
    const sidecars = await this.sidecars.all();
    return sidecars.filter(
      (sidecar) =>
        sidecar.desired_state === DesiredVmState.Running &&
        this.lifecycle.restarts.crashLooping(sidecar.vm_id),
    ).length;
  }

  /** How many VMs are paused on a full disk, as last inspected. */
  async pausedOnFullDisk(): Promise<number> {
    const sidecars = await this.sidecars.all();
    return this.lifecycle.pausedOnFullDisk(sidecars.map(({ vm_id }) => vm_id)).length;
  }

  /** Every VM; their states are asked of the driver all at once, so one slow VM costs one wait. */
  async list(): Promise<VmRecord[]> {
    const sidecars = await this.sidecars.all();
    const states = await Promise.all(sidecars.map((sidecar) => this.lifecycle.stateOf(sidecar)));
    return sidecars.map((sidecar, index) => this.lifecycle.recordOf(sidecar, states[index]));
  }

  /**
   * Every VM for the heartbeat, after reconciling with the processes that run, with the
   * Idempotency-Key each was made with (while kept), and what each committed VM holds.
   */
  async report(): Promise<NodeVmsReport> {
    const { sidecars, found } = await this.reconciliation.reconciled();
    // All at once: each state may wait for the driver, and the heartbeat waits for them all.
    const states = await Promise.all(sidecars.map((sidecar) => this.lifecycle.stateOf(sidecar)));
    const nowMs = this.clock.now();
    const vms: ReportedVm[] = sidecars.map((sidecar, index) => {
      const key = keptKey(sidecar, nowMs);
      return {
        ...this.lifecycle.recordOf(sidecar, states[index]),
        ...(key ? { idempotency_key: key.value } : {}),
        // What a tenant's disk quota counts on the controller, which keeps no size of its own.
        ...(sidecar.disk_gb !== undefined ? { disk_gb: sidecar.disk_gb } : {}),
        ...(sidecar.copies ? { copies: { ...sidecar.copies } } : {}),
      };
    });
    const room = await this.diskRoom.room(sidecars);
    return {
      vms,
      committed: this.lifecycle.committed(sidecars, found),
      ...(room ? { diskRoom: diskRoomMb(room) } : {}),
    };
  }

  /**
   * VMs the controller says were restored on another node since (its heartbeat answer's
   * superseded_vm_ids): each one here is stopped hard if it runs, its disk and run folder (its
   * sidecar with it, so it is listed no more) moved to `superseded/<vm_id>-<stamp>/`, private,
   * for the operator to look at or remove; never started again. An id that is no fleet id, or
   * no VM here, is passed over (the answer is the controller's, but a path is built from it).
   */
  async supersede(
    vmIds: readonly string[],
    why = 'the controller says it was restored on another node',
  ): Promise<void> {
    let changed = false;
    for (const vmId of vmIds) {
      if (typeof vmId !== 'string' || !ID_PATTERN.test(vmId)) continue;
      const setAside = await this.lifecycle.locks
        .run(vmId, () => this.setAside(vmId))
        .catch((error: unknown) => {
          this.logger.error(
            `vm ${vmId}: superseded, but could not be set aside: ${messageOf(error)}`,
          );
          return undefined;
        });
      if (setAside === undefined) continue;
      changed = true;
      this.logger.warn(
        `vm ${vmId}: superseded (${why}): ${setAside.stopped ? 'its QEMU stopped, ' : ''}its disk and files set aside in ${setAside.dir}; it is not listed nor started here any more`,
      );
    }
    if (changed) this.lifecycle.announce();
  }

  private async setAside(vmId: string): Promise<{ dir: string; stopped: boolean } | undefined> {
    await this.lifecycle.provisioned(vmId);
    await this.lifecycle.started(vmId);
    const sidecar = await this.sidecars.of(vmId);
    // A restore under way here is this node's own: the controller records the move to it only
    // once it answers, so until then its record still names the VM's node before.
    if (!sidecar || sidecar.restoring) return undefined;
    const stopped = (await this.driver.find([vmId])).has(vmId);
    await this.driver.stop(vmId, sidecar.driver);
    const stamp = new Date(this.clock.wallNow())
      .toISOString()
      .replace(/[-:]/g, '')
      .replace(/\.\d+Z$/, 'Z');
    const dir = this.files.supersededDir(vmId, stamp);
    await mkdir(dirname(dir), { recursive: true, mode: PRIVATE_DIR_MODE });
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    await rename(this.files.disk(vmId), join(dir, `${vmId}.qcow2`)).catch(
      (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      },
    );
    // The sidecar goes with the run folder: from here on the VM is not this node's.
    await rename(this.files.runDir(vmId), join(dir, 'run'));
    this.sidecars.forget(vmId);
    this.lifecycle.restarts.forget(vmId);
    return { dir, stopped };
  }

  /**
   * A stopping agent leaves its VMs as they are (they outlive it, and the next agent adopts
   * them): says so, naming them, since nothing manages them until it is back.
   */
  async beforeApplicationShutdown(): Promise<void> {
    const vmIds = await this.files.listVmIds();
    if (vmIds.length === 0) return;
    const named = vmIds.slice(0, 10).join(', ') + (vmIds.length > 10 ? ', ...' : '');
    this.logger.warn(
      `agent stopping; its ${vmIds.length} VM(s) (${named}) are left as they are: running ones keep running, unmanaged. Once the node drops out (30 s) the controller still lists them, with node_silent_since, but cannot delete them (409) until this agent starts again with the same VM_NODE_ID and VM_DISK_DIR. To retire this node, delete them through the controller first`,
    );
  }

  /**
   * Stops every process of the VM (also one its sidecar has no record of), removes its
   * runtime files, and removes its disk or keeps it for VM_DISK_RETENTION_S. Throws VmNotOnNodeError for a VM this node does not have, so a second call
   * is a 404.
   */
  async destroy(vmId: string): Promise<void> {
    await this.lifecycle.locks.run(vmId, async () => {
      await this.lifecycle.provisioned(vmId);
      await this.lifecycle.deleting(vmId, () => this.destroyLocked(vmId));
    });
    this.lifecycle.announce();
  }

  /** The delete's work, under the VM's lock, as its phase Deleting. */
  private async destroyLocked(vmId: string): Promise<void> {
    const sidecar = await this.sidecars.of(vmId);
    if (!sidecar) throw new VmNotOnNodeError(vmId);
    await this.driver.stop(vmId, sidecar.driver);
    await this.files.removeRuntime(vmId);
    this.sidecars.forget(vmId);
    this.lifecycle.restarts.forget(vmId);
    // The VM is gone once its run folder is; a disk left by a failure here is retired at start-up.
    const disk = await this.deletedDisks.retire(vmId).catch((error: unknown) => {
      this.logger.error(`vm ${vmId}: could not retire its disk: ${messageOf(error)}`);
      return 'disk left in disks/';
    });
    this.logger.log(`vm ${vmId} destroyed (${disk})`);
  }
}

const MB = 1024 * 1024;

/** The room in whole MB (MiB), rounded down, as the heartbeat carries it. */
function diskRoomMb(room: DiskRoom): HeartbeatDiskRoom {
  return {
    room_mb: Math.floor(room.roomBytes / MB),
    committed_mb: Math.floor(room.committedBytes / MB),
    committable_mb: Math.floor(room.committableBytes / MB),
    reserve_mb: Math.floor(room.reserveBytes / MB),
    overcommit: room.overcommit,
  };
}
