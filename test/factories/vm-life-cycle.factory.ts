import { DesiredVmState, type VmLifeCycle, VmState } from '@app/fleet-domain';

/** A VM's life cycle as the agent answers it: vm-1 running as asked, nothing under way. */
export function vmLifeCycle(overrides: Partial<VmLifeCycle> = {}): VmLifeCycle {
  return {
    vm_id: 'vm-1',
    state: VmState.Running,
    desired_state: DesiredVmState.Running,
    operation: null,
    restart_count: 0,
    last_exit: null,
    reason: null,
    next_start_at: null,
    ...overrides,
  };
}
