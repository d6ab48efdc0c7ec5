import { VmOperation } from '@app/fleet-domain';

/**
 * The agent's VM life cycle as one table: the work this process is doing on a VM (its phase)
 * and the phase each operation may move it to. Pure: no clock, no I/O. `VmLifeCycles` keeps
 * each VM's phase and asks `nextPhase` before every move, so a move the table has no row for
 * is refused in one place, with the VM, the phase and the operation named.
 *
 * The phase is this process's work, not what the guest does: `idle` VMs are whatever the
 * driver sees (Running, Stopped, Error). The operator-visible state is derived from both
 * (`VmLifeCycles.stateOf`): admitting, provisioning and starting are listed Provisioning.
 */
export enum VmPhase {
  /** No work on the VM here: it is what its driver and sidecar say. */
  Idle = 'idle',
  /** Its create is being admitted: files made, not yet answered. */
  Admitting = 'admitting',
  /** A new VM (or a create an earlier agent was killed in) being started. */
  Provisioning = 'provisioning',
  /** An existing VM's start from its own disk, waiting for a slot or under way. */
  Starting = 'starting',
  /** An operator's stop under way (power-down, then its process ended). */
  Stopping = 'stopping',
  /** An operator's restart under way (a stop then a start, or a reset in place). */
  Restarting = 'restarting',
  /** Its delete under way: process stopped, files removed, disk retired. */
  Deleting = 'deleting',
  /**
   * Its node's lease ran out (etcd mode, `fencing/`): its process ended hard, its disk kept,
   * not started again until a heartbeat renews the lease without superseding it.
   */
  Fenced = 'fenced',
}

/** What moves a VM from one phase to another. */
export type VmMoveOperation =
  | 'admit'
  | 'provision'
  | 'start'
  | 'stop'
  | 'restart'
  | 'crash'
  | 'reconcile'
  | 'delete'
  /** The node's lease ran out: the VM is ended and held. */
  | 'fence'
  /** The lease was renewed: the VM is the reconciliation's to start again. */
  | 'unfence'
  /** The work of the phase ended (well or not): back to idle. */
  | 'settle';

/**
 * Every legal move: from a phase, by an operation, to a phase. A phase without a row for an
 * operation refuses it. Why each row exists:
 * - admit only from idle: one admission at a time, of an id no VM here has.
 * - provision from admitting (the create answered) or idle (a create an agent was killed in,
 *   found by reconciliation).
 * - start from idle (the restart policy, an operator's start) or restarting (the restart's
 *   second half); from deleting it stays deleting: the start waits for the delete's lock and
 *   then finds no sidecar.
 * - stop and restart from idle only: an operator's action on a VM with work under way is a 409.
 * - crash and reconcile from idle only: reconciliation leaves a VM with work under way to it.
 * - delete from every phase but deleting (one delete at a time, under the VM's lock).
 * - settle from every phase but idle and fenced.
 * - fence from idle only: work under way (a start, a stop) ends first, the watchdog tries again
 *   each second; fenced is left by unfence (the lease renewed) or delete alone, so nothing else
 *   (reconciliation, an operator's start) runs the VM meanwhile.
 */
export const VM_TRANSITIONS: Readonly<
  Record<VmPhase, Readonly<Partial<Record<VmMoveOperation, VmPhase>>>>
> = {
  [VmPhase.Idle]: {
    admit: VmPhase.Admitting,
    provision: VmPhase.Provisioning,
    start: VmPhase.Starting,
    stop: VmPhase.Stopping,
    restart: VmPhase.Restarting,
    crash: VmPhase.Idle,
    reconcile: VmPhase.Idle,
    delete: VmPhase.Deleting,
    fence: VmPhase.Fenced,
  },
  [VmPhase.Admitting]: {
    provision: VmPhase.Provisioning,
    delete: VmPhase.Deleting,
    settle: VmPhase.Idle,
  },
  [VmPhase.Provisioning]: { delete: VmPhase.Deleting, settle: VmPhase.Idle },
  [VmPhase.Starting]: { delete: VmPhase.Deleting, settle: VmPhase.Idle },
  [VmPhase.Stopping]: { delete: VmPhase.Deleting, settle: VmPhase.Idle },
  [VmPhase.Restarting]: {
    start: VmPhase.Starting,
    delete: VmPhase.Deleting,
    settle: VmPhase.Idle,
  },
  [VmPhase.Deleting]: { start: VmPhase.Deleting, settle: VmPhase.Idle },
  [VmPhase.Fenced]: { unfence: VmPhase.Idle, delete: VmPhase.Deleting },
};

/** A move the table refuses: names the VM, its phase and the operation. */
export class IllegalVmTransitionError extends Error {
  constructor(
    readonly vmId: string,
    readonly phase: VmPhase,
    readonly operation: VmMoveOperation,
  ) {
    super(`vm ${vmId}: cannot ${operation} while ${phase}`);
    this.name = 'IllegalVmTransitionError';
  }
}

/** True when the table has a move for the operation from the phase. */
export function mayMove(phase: VmPhase, operation: VmMoveOperation): boolean {
  return VM_TRANSITIONS[phase][operation] !== undefined;
}

/** The phase the operation moves the VM to; IllegalVmTransitionError when the table has none. */
export function nextPhase(vmId: string, phase: VmPhase, operation: VmMoveOperation): VmPhase {
  const next = VM_TRANSITIONS[phase][operation];
  if (next === undefined) throw new IllegalVmTransitionError(vmId, phase, operation);
  return next;
}

/** One move, as the hooks hear of it. */
export interface VmMove {
  vmId: string;
  from: VmPhase;
  operation: VmMoveOperation;
  to: VmPhase;
}

/**
 * A concern that joins the life cycle's moves (as Nomad's allocation runner hooks do): told of
 * every move after the table allowed it and the phase changed. Bound as a list under
 * `VM_TRANSITION_HOOKS`; a hook that throws is logged and does not undo the move. The agent's
 * own per-VM memories (restart policy, blocked ports, disk-full pauses) are its first hook
 * (`VmLifeCycles`); copies and fencing add theirs.
 */
export interface VmTransitionHook {
  /** Names the hook in the log when it fails. */
  readonly name: string;
  moved(move: VmMove): void;
}

/** DI token of the extra hooks (`VmTransitionHook[]`). */
export const VM_TRANSITION_HOOKS = Symbol('VM_TRANSITION_HOOKS');

/** Each phase's operation under way as operators see it (the life cycle's `operation`). */
export const PHASE_OPERATION: Readonly<Record<VmPhase, VmOperation | null>> = {
  [VmPhase.Idle]: null,
  [VmPhase.Admitting]: null,
  [VmPhase.Provisioning]: null,
  [VmPhase.Starting]: VmOperation.Starting,
  [VmPhase.Stopping]: VmOperation.Stopping,
  [VmPhase.Restarting]: VmOperation.Restarting,
  [VmPhase.Deleting]: null,
  [VmPhase.Fenced]: null,
};

/** The move an operator's operation makes. */
export const OPERATION_MOVE: Readonly<Record<VmOperation, VmMoveOperation>> = {
  [VmOperation.Starting]: 'start',
  [VmOperation.Stopping]: 'stop',
  [VmOperation.Restarting]: 'restart',
};
