import { FleetVmWithLifeCycle, VmState } from '@app/fleet-domain';
import { CONSOLE_HEADERS, VM_PAGE_CSP } from '../operations/ops-listener.http';
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

  it("is xterm.js, loaded from the controller's own files before the terminal's script (no CDN)", () => {
    const text = terminalSection(vm).text;
    expect(text).toContain('<link rel="stylesheet" href="/console/assets/xterm.css" />');
    const xterm = text.indexOf('<script src="/console/assets/xterm.js" defer></script>');
    expect(xterm).toBeGreaterThan(-1);
    expect(xterm).toBeLessThan(text.indexOf('/console/assets/terminal.js'));
    expect(text).not.toMatch(/(?:src|href)="(?!\/console\/)/);
  });

  it('encodes a hostile id in its paths and escapes it in its label', () => {
    const text = terminalSection({ ...vm, vm_id: 'a"b/../x' }).text;
    expect(text).toContain('data-terminal="/console/vms/a%22b%2F..%2Fx/terminal"');
    expect(text).not.toContain('a"b');
  });

  it("allows on the VM page the inline styles xterm.js injects, and nothing else of the console's policy changes", () => {
    const directives = (policy: string): Record<string, string> =>
      Object.fromEntries(
        policy.split(';').map((directive) => {
          const [name, ...values] = directive.trim().split(/\s+/);
          return [name, values.join(' ')];
        }),
      );
    const page = directives(VM_PAGE_CSP);
    const base = directives(CONSOLE_HEADERS['Content-Security-Policy']);
    expect(page['style-src']).toBe("'self' 'unsafe-inline'");
    expect(page['script-src']).toBe("'self'");
    expect({ ...page, 'style-src': base['style-src'] }).toEqual(base);
  });
});
