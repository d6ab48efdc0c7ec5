import { isIP } from 'node:net';
import type { FleetVm } from '../api/fleet-api.client';
import { printable } from '../terminal/printable';

/** True when the VM forwards more than SSH (a create with `ports`): `vms` then shows PORTS. */
export function publishesPorts(vm: FleetVm): boolean {
  return vm.host_ports.some((port) => !(port.guest_port === 22 && port.protocol === 'tcp'));
}

/**
 * Each forward of the VM as `wg_ip:host_port → guest_port/proto` (an IPv6 address in
 * brackets), in the order the API lists them; `?` for the address when its node is not
 * listed. Only numbers and an IP address the API gave, so nothing else reaches a terminal.
 */
export function formatForwards(vm: FleetVm, wgIp: string | undefined): string {
  const host = wgIp === undefined || isIP(wgIp) === 0 ? '?' : isIP(wgIp) === 6 ? `[${wgIp}]` : wgIp;
  return vm.host_ports
    .map(
      ({ host_port, guest_port, protocol }) =>
        `${host}:${Number(host_port)} → ${Number(guest_port)}/${printable(protocol)}`,
    )
    .join(', ');
}
