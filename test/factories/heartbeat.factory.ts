import type { NodeHeartbeat, VmRecord } from '@app/fleet-domain';

let sequence = 0;

/** A heartbeat as an agent sends it; each call is stamped later than the one before. */
export function heartbeat(overrides: Partial<NodeHeartbeat> & { node_id: string }): NodeHeartbeat {
  sequence += 1;
  return {
    wg_ip: '127.0.0.1',
    hostname: `host-${overrides.node_id}`,
    ram_total_mb: 16384,
    ram_used_mb: 4096,
    cpu_cores: 8,
    cpu_load_pct: 12.5,
    kvm_available: false,
    reserved: false,
    vms: [],
    boot_id: 'boot-1',
    timestamp_utc: new Date(Date.UTC(2026, 7, 6, 12, 0, 0) + sequence)
      .toISOString()
      .replace('Z', '123456Z'),
    ...overrides,
  };
}

export function vmRecord(vm_id: string, overrides: Partial<VmRecord> = {}): VmRecord {
  return {
    vm_id,
    vm_type: 'web',
    state: 'Running' as VmRecord['state'],
    ram_alloc_mb: 1024,
    vcpu_count: 1,
    started_at: '2026-08-06T11:00:00.000000001Z',
    tenant_id: null,
    host_ports: [],
    accel: null,
    ...overrides,
  };
}

/** A VM publishing one TCP port: `hostPort` on its node to `guestPort` in the guest. */
export function vmPublishing(vm_id: string, hostPort: number, guestPort = 22): VmRecord {
  return vmRecord(vm_id, {
    host_ports: [{ host_port: hostPort, guest_port: guestPort, protocol: 'tcp' }],
  });
}
