import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { vmHostConfig } from '../../../../../test/support/configs';
import { GUEST_FIREWALL_TABLE, guestFirewallRules, guestFirewallTable } from './guest-firewall';
import { GuestIsolation, nftCgroupOf } from './guest-isolation';

describe('guestFirewallRules', () => {
  const rules = guestFirewallRules(
    'ppn_vm_guests',
    { nftPath: 'unified/ppn-vm-guests.node-1', level: 1 },
    [9206, 9203, 9204, 6379, 9203],
  );

  it("replaces the whole table, refusing the guests' cgroup the loopback (but DNS) and the daemon ports on any address", () => {
    expect(rules).toBe(
      [
        'table inet ppn_vm_guests',
        'delete table inet ppn_vm_guests',
        'table inet ppn_vm_guests {',
        '  chain output {',
        '    type filter hook output priority filter; policy accept;',
        '    ct state established,related accept',
        '    socket cgroupv2 level 1 "unified/ppn-vm-guests.node-1" ip daddr 127.0.0.0/8 meta l4proto { tcp, udp } th dport 53 accept',
        '    socket cgroupv2 level 1 "unified/ppn-vm-guests.node-1" ip6 daddr ::1 meta l4proto { tcp, udp } th dport 53 accept',
        '    socket cgroupv2 level 1 "unified/ppn-vm-guests.node-1" ip daddr 127.0.0.0/8 meta l4proto tcp reject with tcp reset',
        '    socket cgroupv2 level 1 "unified/ppn-vm-guests.node-1" ip6 daddr ::1 meta l4proto tcp reject with tcp reset',
        '    socket cgroupv2 level 1 "unified/ppn-vm-guests.node-1" ip daddr 127.0.0.0/8 reject',
        '    socket cgroupv2 level 1 "unified/ppn-vm-guests.node-1" ip6 daddr ::1 reject',
        '    socket cgroupv2 level 1 "unified/ppn-vm-guests.node-1" ip daddr 169.254.0.0/16 meta l4proto tcp reject with tcp reset',
        '    socket cgroupv2 level 1 "unified/ppn-vm-guests.node-1" ip6 daddr fe80::/10 meta l4proto tcp reject with tcp reset',
        '    socket cgroupv2 level 1 "unified/ppn-vm-guests.node-1" ip daddr 169.254.0.0/16 reject',
        '    socket cgroupv2 level 1 "unified/ppn-vm-guests.node-1" ip6 daddr fe80::/10 reject',
        '    socket cgroupv2 level 1 "unified/ppn-vm-guests.node-1" tcp dport { 6379, 9203, 9204, 9206 } reject with tcp reset',
        '    socket cgroupv2 level 1 "unified/ppn-vm-guests.node-1" udp dport { 6379, 9203, 9204, 9206 } reject',
        '  }',
        '}',
        '',
      ].join('\n'),
    );
  });

  it('names a table per node, of characters nft takes unquoted', () => {
    expect(guestFirewallTable('node-1.mesh')).toBe('ppn_vm_guests_node_1_mesh');
  });
});

describe('nftCgroupOf', () => {
  it('names a cgroup by its path under /sys/fs/cgroup and its depth under the cgroup v2 root', () => {
    expect(nftCgroupOf('/sys/fs/cgroup/unified', '/sys/fs/cgroup/unified/ppn-vm-guests.n')).toEqual(
      {
        nftPath: 'unified/ppn-vm-guests.n',
        level: 1,
      },
    );
    expect(
      nftCgroupOf(
        '/sys/fs/cgroup',
        '/sys/fs/cgroup/system.slice/service-vm-host.service/vm-guests',
      ),
    ).toEqual({ nftPath: 'system.slice/service-vm-host.service/vm-guests', level: 3 });
  });

  it('cannot name one outside /sys/fs/cgroup', () => {
    expect(nftCgroupOf('/mnt/cgroup2', '/mnt/cgroup2/ppn-vm-guests.n')).toBeUndefined();
  });
});

describe("the unit's vm-host-guest-firewall", () => {
  it('loads the same table as an agent started as root, for the same settings', () => {
    const env = {
      VM_SPAWN_PORT: '9300',
      VM_METRICS_ADDR: '10.8.0.21:9100',
      VM_RESERVED_HOST_PORTS: '9207,9300',
    };
    const config = vmHostConfig({ ...env, VM_WG_IP: '127.0.0.1' });
    const cgroup = { nftPath: 'system.slice/service-vm-host.service/vm-guests', level: 3 };
    const script = spawnSync(
      'sh',
      [
        join(__dirname, '../../../../../deploy/systemd/vm-host-guest-firewall'),
        '--print',
        cgroup.nftPath,
        '3',
      ],
      { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8' },
    );
    expect(script.stderr).toBe('');
    expect(script.stdout).toBe(
      guestFirewallRules(GUEST_FIREWALL_TABLE, cgroup, new GuestIsolation(config).refusedPorts()),
    );
  });

  it('refuses a port that is not a number, loading nothing', () => {
    const script = spawnSync(
      'sh',
      [
        join(__dirname, '../../../../../deploy/systemd/vm-host-guest-firewall'),
        '--print',
        'x',
        '1',
      ],
      {
        env: { PATH: process.env.PATH, VM_RESERVED_HOST_PORTS: '9207,1 } accept; #' },
        encoding: 'utf8',
      },
    );
    expect(script.status).toBe(1);
    expect(script.stdout).toBe('');
    expect(script.stderr).toContain('not a port: }');
  });
});
