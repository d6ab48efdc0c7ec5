/**
 * The nftables rules that keep guests off the fleet's machinery. A guest's traffic leaves the
 * node from its QEMU's sockets (the user network), and QEMU runs in a cgroup of its own: the rules
 * match those sockets by that cgroup (nft's `socket cgroupv2`), so nothing else on the node is
 * filtered.
 */

/** The table the unit loads; as root the agent loads `guestFirewallTable(node_id)`. */
export const GUEST_FIREWALL_TABLE = 'ppn_vm_guests';

/** A node's own table, so that agents sharing a network namespace keep each other's. */
export function guestFirewallTable(nodeId: string): string {
  return `${GUEST_FIREWALL_TABLE}_${nodeId.replace(/[^A-Za-z0-9_]/g, '_')}`;
}

/** Ports of the fleet's stores, refused to guests on every address (Redis; etcd's client and peer ports). */
export const STORE_PORTS: readonly number[] = [6379, 2379, 2380];

/** A cgroup v2 folder as `socket cgroupv2` names it. */
export interface GuestCgroup {
  /** Its path relative to /sys/fs/cgroup, which nft resolves to the cgroup's id at load time. */
  nftPath: string;
  /** Its depth below the cgroup v2 root. */
  level: number;
}

/**
 * The whole table, replacing any earlier one (`nft -f`): guests' new connections to the node's
 * loopback (127.0.0.0/8, ::1: QEMU's user network makes it the guest's 10.0.2.2), to link-local
 * addresses and to `ports` on any address are refused (a TCP reset, an ICMP error otherwise: the guest's connect fails at
 * once rather than hanging). DNS is the exception on loopback: QEMU answers the guest's 10.0.2.3
 * from the node's resolver, often a local one (127.0.0.53). Replies of connections made to a
 * published port are not new, so they pass.
 */
export function guestFirewallRules(
  table: string,
  cgroup: GuestCgroup,
  ports: readonly number[],
): string {
  const guests = `socket cgroupv2 level ${cgroup.level} ${JSON.stringify(cgroup.nftPath)}`;
  const portSet = [...new Set(ports)].sort((a, b) => a - b).join(', ');
  return [
    `table inet ${table}`,
    `delete table inet ${table}`,
    `table inet ${table} {`,
    '  chain output {',
    '    type filter hook output priority filter; policy accept;',
    '    ct state established,related accept',
    `    ${guests} ip daddr 127.0.0.0/8 meta l4proto { tcp, udp } th dport 53 accept`,
    `    ${guests} ip6 daddr ::1 meta l4proto { tcp, udp } th dport 53 accept`,
    `    ${guests} ip daddr 127.0.0.0/8 meta l4proto tcp reject with tcp reset`,
    `    ${guests} ip6 daddr ::1 meta l4proto tcp reject with tcp reset`,
    `    ${guests} ip daddr 127.0.0.0/8 reject`,
    `    ${guests} ip6 daddr ::1 reject`,
    // Link-local: a cloud node's metadata service (169.254.169.254, its credentials) and
    // services on fe80:: addresses are the node's too, reached through QEMU's sockets.
    `    ${guests} ip daddr 169.254.0.0/16 meta l4proto tcp reject with tcp reset`,
    `    ${guests} ip6 daddr fe80::/10 meta l4proto tcp reject with tcp reset`,
    `    ${guests} ip daddr 169.254.0.0/16 reject`,
    `    ${guests} ip6 daddr fe80::/10 reject`,
    `    ${guests} tcp dport { ${portSet} } reject with tcp reset`,
    `    ${guests} udp dport { ${portSet} } reject`,
    '  }',
    '}',
    '',
  ].join('\n');
}
