import { HeartbeatVm } from './heartbeat-vm';
import { FleetVm, shownVm, vmRecordOf } from './fleet-vm';
import { VmState } from './vm-record';

const reported: HeartbeatVm & { extra?: string } = {
  vm_id: 'vm-1',
  vm_type: 'web',
  state: VmState.Running,
  ram_alloc_mb: 1024,
  vcpu_count: 1,
  started_at: '2026-08-06T12:00:00Z',
  tenant_id: 'acme',
  host_ports: [{ host_port: 22022, guest_port: 22, protocol: 'tcp' }],
  idempotency_key: `${'0'.repeat(64)}.${'f'.repeat(64)}`,
  extra: 'kept by nobody',
};

describe('the VM an answer shows', () => {
  it('is the VmRecord fields and the node it runs on, never the spawn key or anything else', () => {
    const shown: FleetVm = shownVm(reported, 'n1');
    expect(shown).toEqual({
      vm_id: 'vm-1',
      vm_type: 'web',
      state: 'Running',
      ram_alloc_mb: 1024,
      vcpu_count: 1,
      started_at: '2026-08-06T12:00:00Z',
      tenant_id: 'acme',
      host_ports: [{ host_port: 22022, guest_port: 22, protocol: 'tcp' }],
      accel: null,
      node_id: 'n1',
    });
  });

  it('is stored without its node: vmRecordOf keeps the VmRecord fields only', () => {
    const record = vmRecordOf(shownVm(reported, 'n1'));
    expect(record).not.toHaveProperty('node_id');
    expect(record).not.toHaveProperty('idempotency_key');
    expect(Object.keys(record)).toHaveLength(9);
  });

  it('fills in what an agent may leave out: tenant_id null, accel null', () => {
    const { tenant_id: _left_out, ...bare } = reported;
    expect(shownVm(bare as HeartbeatVm, 'n1').tenant_id).toBeNull();
    expect(shownVm(bare as HeartbeatVm, 'n1').accel).toBeNull();
  });

  it('passes through the accelerator the agent reported', () => {
    expect(shownVm({ ...reported, accel: 'kvm' }, 'n1').accel).toBe('kvm');
    expect(vmRecordOf({ ...reported, accel: 'tcg' }).accel).toBe('tcg');
  });
});
