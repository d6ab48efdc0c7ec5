/** What a backup's manifest says of its VM: the VM itself, and the create that would make it again. */
import type { VmSidecar } from '../files/vm-sidecar';

/**
 * The VM as the manifest keeps it: its sidecar but what belongs to this node's agent alone (its
 * process, the key its create was made with: the API never shows a key, nor does a backup).
 */
export function describedVm(sidecar: VmSidecar): Record<string, unknown> {
  const { driver: _driver, idempotency_key: _key, spawn_deadline: _deadline, ...vm } = sidecar;
  return vm;
}

/** The create request (POST /v1/vms) that would make a VM like this one. */
export function createRequestOf(sidecar: VmSidecar): Record<string, unknown> {
  const [, ...published] = sidecar.forwards ?? sidecar.host_ports;
  return {
    vm_type: sidecar.vm_type,
    ram_mb: sidecar.ram_alloc_mb,
    vcpu_count: sidecar.vcpu_count,
    tenant_id: sidecar.tenant_id,
    ports: published.map(({ guest_port, protocol }) => ({ guest_port, protocol })),
    ...(sidecar.disk_gb === undefined ? {} : { disk_gb: sidecar.disk_gb }),
  };
}
