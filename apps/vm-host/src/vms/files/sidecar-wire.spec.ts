import { vmSidecar } from '../../../../../test/factories/vm-sidecar.factory';
import { wireRefusals } from './sidecar-wire';
import type { VmSidecar } from './vm-sidecar';

const VALID: VmSidecar = vmSidecar({
  vm_id: 'vm-00000000000000dd',
  tenant_id: 'acme',
  host_ports: [{ host_port: 40_022, guest_port: 22, protocol: 'tcp' }],
  started_at: '2026-08-06T11:00:01.000Z',
  driver: { kind: 'fake', pid: 7 },
});

describe('wireRefusals', () => {
  it('finds nothing to refuse in a sidecar the wire takes, never started or started', () => {
    expect(wireRefusals(VALID)).toEqual([]);
    expect(wireRefusals({ ...VALID, tenant_id: null, started_at: null, host_ports: [] })).toEqual(
      [],
    );
  });

  it.each([
    ['vm_type', 'bad type!'],
    ['tenant_id', 'a b'],
    ['ram_alloc_mb', 3e9],
    ['vcpu_count', 70_000],
    ['started_at', 'yesterday'],
    ['host_ports', [{ host_port: 0, guest_port: 22, protocol: 'tcp' }]],
    ['host_ports', Array.from({ length: 100 }, () => VALID.host_ports[0])],
  ] as const)('names %s when it holds %j', (field, value) => {
    expect(wireRefusals({ ...VALID, [field]: value })).toEqual([field]);
  });

  it('names every refused field, in the order of the record', () => {
    const bad = { ...VALID, started_at: 'yesterday', vm_type: '', vcpu_count: 70_000 };
    expect(wireRefusals(bad)).toEqual(['vm_type', 'vcpu_count', 'started_at']);
  });
});
