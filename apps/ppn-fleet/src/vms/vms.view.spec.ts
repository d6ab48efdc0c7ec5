import { DesiredVmState, VmState } from '@app/fleet-domain';
import { vmLifeCycle } from '../../../../test/factories/vm-life-cycle.factory';
import type { FleetVm } from '../api/fleet-api.client';
import type { FleetVmWithLifeCycle } from '../api/fleet-ops-api.client';
import { formatVms, sshTarget } from './vms.view';

const vm: FleetVm = {
  vm_id: 'vm-1',
  vm_type: 'web',
  state: 'Running',
  ram_alloc_mb: 2048,
  vcpu_count: 2,
  started_at: '2026-08-06T12:00:00Z',
  tenant_id: 'acme',
  host_ports: [{ host_port: 22022, guest_port: 22, protocol: 'tcp' }],
  node_id: 'node-a',
  accel: 'kvm',
};
const nodeA = {
  node_id: 'node-a',
  hostname: 'a',
  wg_ip: '10.8.0.2',
  ram_available_mb: 1,
  vm_count: 1,
  kvm_available: true,
  reserved: false,
  last_heartbeat: '2026-08-06T12:00:00Z',
};

describe('vms view', () => {
  it('gives the SSH target of a VM forwarding TCP port 22, at its node WireGuard address', () => {
    expect(sshTarget(vm, '10.8.0.2', 'debian')).toBe('ssh -p 22022 debian@10.8.0.2');
    expect(sshTarget({ ...vm, host_ports: [] }, '10.8.0.2', 'debian')).toBeUndefined();
    expect(
      sshTarget(
        { ...vm, host_ports: [{ host_port: 1, guest_port: 22, protocol: 'udp' }] },
        'x',
        'u',
      ),
    ).toBeUndefined();
    expect(sshTarget(vm, undefined, 'debian')).toBeUndefined();
    expect(sshTarget(vm, 'fd00::2', 'debian')).toBe('ssh -p 22022 debian@fd00::2');
  });

  it('gives no SSH target unless the address is an IP and the port a port: it is pasted into a shell', () => {
    for (const wgIp of [
      '10.8.0.2;reboot',
      '10.8.0.2 -oProxyCommand=x',
      '\u001b[2J10.8.0.2',
      'a',
      '',
    ]) {
      expect(sshTarget(vm, wgIp, 'debian')).toBeUndefined();
    }
    for (const hostPort of [0, 65_536, 22.5, -22, Number.NaN]) {
      const forwarded = {
        ...vm,
        host_ports: [{ host_port: hostPort, guest_port: 22, protocol: 'tcp' as const }],
      };
      expect(sshTarget(forwarded, '10.8.0.2', 'debian')).toBeUndefined();
    }
  });

  it('shows the strings of the answer with their control characters replaced', () => {
    const hostile = { ...vm, vm_id: 'vm-\u001b[31m1', node_id: 'node;\u001ba', tenant_id: 'a\nb' };
    const table = formatVms(
      [hostile],
      [{ ...nodeA, node_id: 'node;\u001ba', wg_ip: '10.8.0.2;x' }],
      'debian',
      false,
    );
    expect(table.split('\n')[1]).toBe(
      'vm-?[31m1  web   Running  2048 MB      2  kvm    a?b     node;?a  -',
    );
  });

  it('lists each VM with its node and SSH target, - where there is none', () => {
    expect(
      formatVms(
        [
          vm,
          { ...vm, vm_id: 'vm-2', tenant_id: null, node_id: 'gone', state: 'Error', accel: null },
        ],
        [nodeA],
        'ubuntu',
        false,
      ),
    ).toBe(
      [
        'VM    TYPE  STATE        RAM  VCPUS  ACCEL  TENANT  NODE    SSH',
        'vm-1  web   Running  2048 MB      2  kvm    acme    node-a  ssh -p 22022 ubuntu@10.8.0.2',
        'vm-2  web   Error    2048 MB      2  -      -       gone    -',
      ].join('\n'),
    );
    expect(formatVms([], [], 'debian', false)).toBe('no VMs');
    const dropped = { ...vm, node_silent_since: '2026-08-06T12:00:00Z' };
    expect(formatVms([dropped], [], 'debian', false).split('\n')[1]).toBe(
      'vm-1  web   Running  2048 MB      2  kvm    acme    node-a (dropped)  -',
    );
  });

  it('shows how each VM runs: kvm, tcg in yellow, - before its start or from an older controller', () => {
    const tcg = { ...vm, vm_id: 'vm-2', accel: 'tcg' as const };
    const old: FleetVm = { ...vm, vm_id: 'vm-3' };
    delete (old as Partial<FleetVm>).accel;
    const rows = formatVms([vm, tcg, old], [nodeA], 'debian', false).split('\n').slice(1);
    expect(rows.map((row) => row.split(/ {2,}/)[5])).toEqual(['kvm', 'tcg', '-']);
    expect(formatVms([tcg], [nodeA], 'debian', true)).toContain('\u001b[33mtcg');
  });

  it('gives a silent VM no SSH target even when its node id is listed: that is another machine now', () => {
    // node-a heartbeats again, from a machine with a cloned VM_NODE_ID or another VM_DISK_DIR
    // that does not list vm-1: its wg_ip is not where vm-1 runs.
    const silent = { ...vm, node_silent_since: '2026-08-06T12:00:00Z' };
    expect(sshTarget(silent, '10.8.0.2', 'debian')).toBeUndefined();
    expect(formatVms([silent], [nodeA], 'debian', false).split('\n')[1]).toBe(
      'vm-1  web   Running  2048 MB      2  kvm    acme    node-a (not listed by its agent)  -',
    );
  });

  it('gives a VM that is not Running no SSH target: nothing answers on a Stopped or Error VM', () => {
    for (const state of ['Stopped', 'Error', 'Provisioning'] as const) {
      expect({ state, ssh: sshTarget({ ...vm, state }, '10.8.0.2', 'debian') }).toEqual({
        state,
        ssh: undefined,
      });
    }
    const stopped = { ...vm, vm_id: 'vm-2', state: 'Stopped' as const };
    expect(formatVms([vm, stopped], [nodeA], 'debian', false).split('\n').slice(1)).toEqual([
      'vm-1  web   Running  2048 MB      2  kvm    acme    node-a  ssh -p 22022 debian@10.8.0.2',
      'vm-2  web   Stopped  2048 MB      2  kvm    acme    node-a  -',
    ]);
    // The operations listener's life cycle is newer than the heartbeat's state: it decides.
    const lifeCycle = vmLifeCycle({
      state: VmState.Stopped,
      desired_state: DesiredVmState.Stopped,
    }) as FleetVmWithLifeCycle['life_cycle'];
    expect(
      formatVms([{ ...vm, life_cycle: lifeCycle }], [nodeA], 'debian', false).split('\n')[1],
    ).toBe('vm-1  web   Stopped  2048 MB      2  kvm    acme    node-a  -');
  });

  it('shows PORTS, each forward as wg_ip:host_port → guest_port/proto, once a VM publishes more than SSH', () => {
    const web = {
      ...vm,
      host_ports: [
        { host_port: 22022, guest_port: 22, protocol: 'tcp' as const },
        { host_port: 40080, guest_port: 80, protocol: 'tcp' as const },
        { host_port: 5353, guest_port: 53, protocol: 'udp' as const },
      ],
    };
    const lines = formatVms(
      [web, { ...vm, vm_id: 'vm-2' }, { ...web, vm_id: 'vm-3', node_id: 'gone' }],
      [nodeA, { ...nodeA, node_id: 'node-6', wg_ip: 'fd00::6' }],
      'debian',
      false,
    ).split('\n');
    expect(lines[0]).toMatch(/ SSH +PORTS$/);
    expect(lines[1]).toMatch(
      / 10\.8\.0\.2:22022 → 22\/tcp, 10\.8\.0\.2:40080 → 80\/tcp, 10\.8\.0\.2:5353 → 53\/udp$/,
    );
    expect(lines[2]).toMatch(/ 10\.8\.0\.2:22022 → 22\/tcp$/);
    expect(lines[3]).toMatch(/ -  +\?:22022 → 22\/tcp, \?:40080 → 80\/tcp, \?:5353 → 53\/udp$/);
    const onV6 = formatVms(
      [{ ...web, node_id: 'node-6' }],
      [{ ...nodeA, node_id: 'node-6', wg_ip: 'fd00::6' }],
      'debian',
      false,
    );
    expect(onV6).toContain('[fd00::6]:40080 → 80/tcp');
  });
});
