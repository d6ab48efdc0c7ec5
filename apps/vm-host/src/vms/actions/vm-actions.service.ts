import { Injectable, Logger } from '@nestjs/common';
import { open } from 'node:fs/promises';
import {
  DEFAULT_CONSOLE_BYTES,
  DesiredVmState,
  StopVmRequest,
  VmConsole,
  VmLifeCycle,
  VmOperation,
  VmState,
} from '@app/fleet-domain';
import { VmHostConfig } from '../../config/vm-host.config';
import { VmAdmissionService } from '../admission/vm-admission.service';
import { VmDiskRoom } from '../admission/vm-disk-room';
import { DriverRecord, VmDriver } from '../vm-driver';
import { VmFiles } from '../files/vm-files';
import { VmSidecar } from '../files/vm-sidecar';
import { VmLifeCycles } from '../life-cycle/vm-life-cycles';
import { VmPhase } from '../life-cycle/vm-transitions';
import { VmRestartService } from '../reconciliation/vm-restart.service';
import { VmSidecars } from '../files/vm-sidecars';
import { printableConsole } from './console-text';
import {
  VmActionConflictError,
  VmDoesNotFitError,
  VmNotOnNodeError,
  VmTerminalRefusedError,
  messageOf,
} from '../vms.errors';

/**
 * What an operator does to a VM on its node: stop (ACPI power-down, then its process ended
 * after a timeout; at once when forced), start (from its own disk, admitted as a create is),
 * restart (a stop then a start; a reset in place when forced), and read its serial console.
 * Stops and restarts answer at once and go on in the background; the VM's desired state is
 * written first, so an agent restarted meanwhile finishes what was asked.
 */
@Injectable()
export class VmActionsService {
  private readonly logger = new Logger('Vms');

  constructor(
    private readonly files: VmFiles,
    private readonly sidecars: VmSidecars,
    private readonly lifecycle: VmLifeCycles,
    private readonly admission: VmAdmissionService,
    private readonly restarts: VmRestartService,
    private readonly driver: VmDriver,
    private readonly diskRoom: VmDiskRoom,
    private readonly config: VmHostConfig,
  ) {}

  /** Every VM's life cycle. */
  async lifeCycles(): Promise<VmLifeCycle[]> {
    const sidecars = await this.sidecars.all();
    const states = await Promise.all(sidecars.map((sidecar) => this.lifecycle.stateOf(sidecar)));
    return sidecars.map((sidecar, index) => this.lifecycle.lifeCycleOf(sidecar, states[index]));
  }

  async lifeCycle(vmId: string): Promise<VmLifeCycle> {
    const sidecar = await this.existing(vmId);
    return this.lifecycle.lifeCycleOf(sidecar, await this.lifecycle.stateOf(sidecar));
  }

  async stop(vmId: string, request: StopVmRequest): Promise<VmLifeCycle> {
    await this.exclusively(vmId, async (sidecar) => {
      const live = await this.isLive(vmId);
      if (sidecar.desired_state === DesiredVmState.Stopped && !live) {
        throw VmActionConflictError.alreadyStopped(vmId);
      }
      await this.desire(sidecar, DesiredVmState.Stopped);
      // A guest paused on a full disk hears no power button: its process is ended at once.
      const paused = live && (await this.driver.inspect(vmId, sidecar.driver)) === 'io-error';
      const halt = paused ? { ...request, force: true } : request;
      this.logger.log(
        `vm ${vmId}: stop asked${request.force ? ' (forced)' : paused ? ' (paused on a full disk: its process is ended at once)' : `, ${request.timeout_s} s to power down`}`,
      );
      if (live) {
        const record = sidecar.driver;
        this.lifecycle.operate(vmId, VmOperation.Stopping, () =>
          this.lifecycle.locks.run(vmId, async () => {
            await this.halt(vmId, record, halt);
            this.lifecycle.resumedFromDiskFull(vmId);
          }),
        );
      }
    });
    return this.lifeCycle(vmId);
  }

  async start(vmId: string): Promise<VmLifeCycle> {
    await this.exclusively(vmId, (sidecar) => this.startLocked(sidecar));
    return this.lifeCycle(vmId);
  }

  async restart(vmId: string, request: StopVmRequest): Promise<VmLifeCycle> {
    await this.exclusively(vmId, async (sidecar) => {
      if (!(await this.isLive(vmId))) return this.startLocked(sidecar);
      await this.desire(sidecar, DesiredVmState.Running);
      const record = sidecar.driver;
      // A guest paused on a full disk hears no power button: its process is ended at once.
      const paused = (await this.driver.inspect(vmId, record)) === 'io-error';
      this.logger.log(
        `vm ${vmId}: restart asked${request.force ? ' (forced: reset in place)' : paused ? ' (paused on a full disk: its process is ended, then it starts from its disk)' : ''}`,
      );
      this.lifecycle.operate(vmId, VmOperation.Restarting, async () => {
        if (request.force) {
          await this.lifecycle.locks.run(vmId, () => this.driver.reset(vmId, record));
          this.lifecycle.resumedFromDiskFull(vmId);
          this.logger.log(`vm ${vmId} reset`);
          return;
        }
        const halt = paused ? { ...request, force: true } : request;
        await this.lifecycle.locks.run(vmId, () => this.halt(vmId, record, halt));
        this.lifecycle.resumedFromDiskFull(vmId);
        const fresh = await this.sidecars.of(vmId);
        // Deleted or stopped meanwhile: nothing more to do. (Still 'restarting' here, so no
        // reconciliation takes the VM for crashed in between.)
        if (fresh?.desired_state === DesiredVmState.Running) {
          this.restarts.startAgain(fresh, 'operator');
        }
      });
    });
    return this.lifeCycle(vmId);
  }

  /**
   * The part of the VM's serial console log asked for, at most max_bytes of it, made printable:
   * from `from` (a follower's last `next`), else its last max_bytes.
   */
  async console(vmId: string, query: { from?: number; max_bytes?: number }): Promise<VmConsole> {
    await this.existing(vmId);
    const maxBytes = query.max_bytes ?? DEFAULT_CONSOLE_BYTES;
    const handle = await open(this.driver.consoleLog(vmId), 'r').catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    });
    if (!handle)
      return {
        vm_id: vmId,
        from: 0,
        next: 0,
        text: '',
        reset: query.from !== undefined && query.from > 0,
      };
    try {
      const size = (await handle.stat()).size;
      // A log shorter than `from` is a new boot's: read it from its start.
      const reset = query.from !== undefined && query.from > size;
      let from = query.from === undefined || reset ? Math.max(0, size - maxBytes) : query.from;
      if (reset) from = 0;
      const length = Math.min(maxBytes, size - from);
      const buffer = Buffer.alloc(Math.max(0, length));
      const { bytesRead } =
        length > 0 ? await handle.read(buffer, 0, length, from) : { bytesRead: 0 };
      return {
        vm_id: vmId,
        from,
        next: from + bytesRead,
        text: printableConsole(buffer.subarray(0, bytesRead)),
        reset,
      };
    } finally {
      await handle.close();
    }
  }

  /**
   * The socket of the running VM's serial port, for an interactive console; a 409 when the VM
   * is not running or runs without one (started before the agent gave it one).
   */
  async consoleSocket(vmId: string): Promise<string> {
    const sidecar = await this.existing(vmId);
    const state = await this.lifecycle.stateOf(sidecar);
    if (state !== VmState.Running) throw VmTerminalRefusedError.notRunning(vmId);
    const socket = this.driver.consoleSocket(vmId);
    if (socket === undefined) throw VmTerminalRefusedError.noSocket(vmId);
    return socket;
  }

  /**
   * Asks the guest to power down and waits out the timeout, then ends whatever still runs; at
   * once when forced. The VM's disk is kept.
   */
  private async halt(vmId: string, record: DriverRecord, request: StopVmRequest): Promise<void> {
    if (!request.force) {
      const down = await this.driver.powerDown(vmId, record, request.timeout_s * 1000);
      if (down) {
        this.logger.log(`vm ${vmId} powered down`);
        return;
      }
      this.logger.warn(
        `vm ${vmId} did not power down within ${request.timeout_s} s; ending its process`,
      );
    }
    await this.driver.stop(vmId, record);
    this.logger.log(`vm ${vmId} stopped`);
  }

  /** The VM's sidecar; VmNotOnNodeError when this node has none. */
  private async existing(vmId: string): Promise<VmSidecar> {
    const sidecar = await this.sidecars.of(vmId);
    if (!sidecar) throw new VmNotOnNodeError(vmId);
    return sidecar;
  }

  /**
   * Runs an action's checks and first writes under the VM's lock, with its sidecar read there:
   * no reconciliation or restart reads or writes the sidecar meanwhile, and the operation it
   * starts is marked before the lock is let go. A VM being created, or with another action
   * under way, is a 409 at once, without waiting.
   */
  private async exclusively(
    vmId: string,
    work: (sidecar: VmSidecar) => Promise<void>,
  ): Promise<void> {
    this.refuseBusy(vmId);
    await this.lifecycle.locks.run(vmId, async () => {
      this.refuseBusy(vmId);
      const sidecar = await this.existing(vmId);
      if (this.sidecars.isStandIn(sidecar)) throw VmActionConflictError.unreadable(vmId);
      await work(sidecar);
    });
  }

  /**
   * A 409 for a VM the life cycle's table lets no operator's action move now (being created,
   * or with an action under way here), in the fixed forms the controller matches.
   */
  private refuseBusy(vmId: string): void {
    if (this.lifecycle.mayMove(vmId, 'stop')) return;
    if (this.lifecycle.phaseOf(vmId) === VmPhase.Fenced) throw VmActionConflictError.fenced(vmId);
    if (this.lifecycle.beingCreated(vmId)) throw VmActionConflictError.beingCreated(vmId);
    const operation = this.lifecycle.operationOf(vmId);
    if (operation !== null) throw VmActionConflictError.busy(vmId, operation);
  }

  /**
   * Start's work, under the VM's lock: admitted, the desired state written, then started. A VM
   * paused on a full disk is resumed instead, when there is room again.
   */
  private async startLocked(sidecar: VmSidecar): Promise<void> {
    const vmId = sidecar.vm_id;
    if (await this.isLive(vmId)) {
      if ((await this.driver.inspect(vmId, sidecar.driver)) !== 'io-error') {
        throw VmActionConflictError.alreadyRunning(vmId);
      }
      return this.resumeLocked(sidecar);
    }
    const refusal = await this.admission.refusalToStart(sidecar);
    if (refusal) {
      this.logger.warn(`vm ${vmId}: start refused: ${refusal}`);
      throw new VmDoesNotFitError(refusal);
    }
    await this.desire(sidecar, DesiredVmState.Running);
    this.logger.log(`vm ${vmId}: start asked`);
    this.restarts.startAgain(sidecar, 'operator');
  }

  /** Resumes a VM paused on a full disk; refused (422) while VM_DISK_DIR has no room. */
  private async resumeLocked(sidecar: VmSidecar): Promise<void> {
    const vmId = sidecar.vm_id;
    if (!(await this.diskRoom.hasRoomAgain())) {
      const refusal = `vm ${vmId} is paused: VM_DISK_DIR on node ${this.config.nodeId} is full (no more than its reserve free); free room there and it is resumed without a start`;
      this.logger.warn(`vm ${vmId}: start refused: ${refusal}`);
      throw new VmDoesNotFitError(refusal);
    }
    await this.desire(sidecar, DesiredVmState.Running);
    await this.driver.resume(vmId, sidecar.driver);
    this.lifecycle.resumedFromDiskFull(vmId);
    this.logger.log(`vm ${vmId}: resumed (start asked; it was paused on a full disk)`);
  }

  private async isLive(vmId: string): Promise<boolean> {
    return (await this.driver.find([vmId])).has(vmId);
  }

  /** Writes what the operator asked; the restart policy starts over. */
  private async desire(sidecar: VmSidecar, desired: DesiredVmState): Promise<void> {
    sidecar.desired_state = desired;
    this.lifecycle.restarts.forget(sidecar.vm_id);
    try {
      await this.files.writeSidecar(sidecar);
    } catch (error) {
      this.logger.error(
        `vm ${sidecar.vm_id}: could not write its desired state: ${messageOf(error)}`,
      );
      throw error;
    }
    this.lifecycle.announce();
  }
}
