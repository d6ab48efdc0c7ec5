import { DesiredVmState } from '@app/fleet-domain';
import type { VmSidecar } from '../../apps/vm-host/src/vms/files/vm-sidecar';

/**
 * A VM's sidecar (`vm.json`) as the agent writes it: a 1 GB, 2 vCPU web VM that should run, never
 * started, with no failure, no key and no exit; the fields given replace these.
 */
export function vmSidecar(overrides: Partial<VmSidecar> = {}): VmSidecar {
  return {
    vm_id: 'vm-00000000000000aa',
    vm_type: 'web',
    tenant_id: null,
    ram_alloc_mb: 1_024,
    vcpu_count: 2,
    host_ports: [],
    created_at: '2026-08-06T11:00:00.000Z',
    started_at: null,
    error: null,
    driver: { kind: 'fake', pid: null },
    idempotency_key: null,
    desired_state: DesiredVmState.Running,
    last_exit: null,
    ...overrides,
  };
}
