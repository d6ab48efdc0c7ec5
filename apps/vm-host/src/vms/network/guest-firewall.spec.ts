import { guestFirewallRules, guestFirewallTable } from './guest-firewall';
import { nftCgroupOf } from './guest-isolation';

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
        '    socket cgroupv2 level 1 "unified/ppn-vm-guests.node-1" ip daddr 127.0.0.0/8 reject',
        '    socket cgroupv2 level 1 "unified/ppn-vm-guests.node-1" ip6 daddr ::1 reject',
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
