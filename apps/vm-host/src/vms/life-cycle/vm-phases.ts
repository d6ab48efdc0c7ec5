import { Logger } from '@nestjs/common';
import { messageOf } from '../vms.errors';
import {
  VmMove,
  VmMoveOperation,
  VmPhase,
  VmTransitionHook,
  mayMove,
  nextPhase,
} from './vm-transitions';

/**
 * Each VM's phase in this process, changed only by `move`: the table of legal moves
 * (`vm-transitions.ts`) is asked first, then every hook hears of the move, in order. A hook
 * that throws is logged and does not undo the move.
 */
export class VmPhases {
  private readonly logger = new Logger('Vms');
  /** Each VM's phase other than idle, by vm_id. */
  private readonly phases = new Map<string, VmPhase>();

  constructor(private readonly hooks: readonly VmTransitionHook[]) {}

  /** The work under way on the VM here (idle: none). */
  of(vmId: string): VmPhase {
    return this.phases.get(vmId) ?? VmPhase.Idle;
  }

  /** True when the table lets the operation move the VM from its phase now. */
  may(vmId: string, operation: VmMoveOperation): boolean {
    return mayMove(this.of(vmId), operation);
  }

  /**
   * Moves the VM's phase by the operation, as the table allows (IllegalVmTransitionError
   * naming the VM, its phase and the operation otherwise), and tells the hooks.
   */
  move(vmId: string, operation: VmMoveOperation): VmPhase {
    const from = this.of(vmId);
    const to = nextPhase(vmId, from, operation);
    if (to === VmPhase.Idle) this.phases.delete(vmId);
    else this.phases.set(vmId, to);
    const move: VmMove = { vmId, from, operation, to };
    for (const hook of this.hooks) {
      try {
        hook.moved(move);
      } catch (error) {
        this.logger.error(`vm ${vmId}: life-cycle hook ${hook.name} failed: ${messageOf(error)}`);
      }
    }
    return to;
  }

  /** Ends the phase's work: back to idle, unless another move took the VM meanwhile. */
  settle(vmId: string, phase: VmPhase): void {
    if (this.of(vmId) === phase) this.move(vmId, 'settle');
  }
}
