import {
  CONTROL_CHARACTERS,
  MAX_LIFE_CYCLE_TEXT,
  VmAccel,
  VmRecord,
  VmState,
} from '@app/fleet-domain';
import { VmRunState, VmSpec } from '../vm-driver';
import { VmSidecar } from '../files/vm-sidecar';

/** A VM's state from what its driver sees of its process. */
export const RUN_STATES: Record<VmRunState, VmState> = {
  running: VmState.Running,
  stopped: VmState.Stopped,
  // Alive but not answering (yet): not known to run.
  unknown: VmState.Provisioning,
  // Paused by its hypervisor on a failed write: it does not run, and no operator stopped it.
  'io-error': VmState.Error,
};

/** A reason or exit text as the wire takes it: one line (a tool's stderr may have many), bounded. */
export function bounded(text: string | null): string | null {
  if (text === null) return null;
  const line = text.replace(CONTROL_CHARACTERS, ' ').trim() || 'unknown';
  return line.length <= MAX_LIFE_CYCLE_TEXT ? line : `${line.slice(0, MAX_LIFE_CYCLE_TEXT - 3)}...`;
}

/** What the driver is asked to make of a VM. */
export function specOf(sidecar: VmSidecar): VmSpec {
  return {
    vmId: sidecar.vm_id,
    vmType: sidecar.vm_type,
    ramMb: sidecar.ram_alloc_mb,
    vcpuCount: sidecar.vcpu_count,
    ...(sidecar.forwards ? { forwards: sidecar.forwards } : {}),
    ...(sidecar.disk_gb === undefined ? {} : { diskGb: sidecar.disk_gb }),
    ...(sidecar.restored_from === undefined ? {} : { restoredDisk: true }),
  };
}

export function toVmRecord(
  sidecar: VmSidecar,
  state: VmState,
  accel: VmAccel | null = null,
): VmRecord {
  return {
    vm_id: sidecar.vm_id,
    vm_type: sidecar.vm_type,
    state,
    ram_alloc_mb: sidecar.ram_alloc_mb,
    vcpu_count: sidecar.vcpu_count,
    started_at: sidecar.started_at,
    tenant_id: sidecar.tenant_id,
    host_ports: sidecar.host_ports,
    accel,
  };
}
