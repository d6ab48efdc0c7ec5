/**
 * The nftables rules that keep guests off the fleet's machinery. A guest's traffic leaves the
 * node from its passt's sockets, and passt runs in a cgroup of its own: the rules match those
 * sockets by that cgroup (nft's `socket cgroupv2`), so nothing else on the node is filtered.
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
 * loopback (127.0.0.0/8, ::1) and to `ports` on any address are refused (a TCP reset, an ICMP
 * error otherwise: the guest's connect fails at once rather than hanging). Replies of connections
 * made to a published port are not new, so they pass.
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
    `    ${guests} ip daddr 127.0.0.0/8 reject`,
    `    ${guests} ip6 daddr ::1 reject`,
    `    ${guests} tcp dport { ${portSet} } reject with tcp reset`,
    `    ${guests} udp dport { ${portSet} } reject`,
    '  }',
    '}',
    '',
  ].join('\n');
}
