import { FleetVmWithLifeCycle, VmState } from '@app/fleet-domain';
import { terminalSection } from './terminal.views';

describe("a VM page's terminal", () => {
  const vm: FleetVmWithLifeCycle = {
    vm_id: 'vm-1',
    tenant_id: 'acme',
    vm_type: 'web',
    state: VmState.Running,
    ram_alloc_mb: 1024,
    vcpu_count: 2,
    started_at: null,
    host_ports: [],
    node_id: 'n1',
    life_cycle: null,
  };

  it('follows the log and opens the terminal of that VM, with its own script file and no inline one', () => {
    const text = terminalSection(vm).text;
    expect(text).toContain('data-serial="/console/vms/vm-1/serial"');
    expect(text).toContain('data-terminal="/console/vms/vm-1/terminal"');
    expect(text).toContain('<script src="/console/assets/terminal.js" defer></script>');
    expect(text).not.toMatch(/\son[a-z]+=|style=|javascript:/i);
  });

  it('encodes a hostile id in its paths and escapes it in its label', () => {
    const text = terminalSection({ ...vm, vm_id: 'a"b/../x' }).text;
    expect(text).toContain('data-terminal="/console/vms/a%22b%2F..%2Fx/terminal"');
    expect(text).not.toContain('a"b');
  });
});
