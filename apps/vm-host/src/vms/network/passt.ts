import { basename } from 'node:path';
import { MAX_HOST_PORTS_PER_VM, type HostPort } from '@app/fleet-domain';
import type { HostProcess } from '../../host-facts/process-table';

/**
 * The guest's side of its network, as the project's image sets it without DHCP
 * (deploy/images): QEMU user networking's old addresses, so the image needs no change. passt
 * answers as the gateway and forwards 10.0.2.3:53 to the host's resolver; 10.0.2.2 is NOT the
 * host (--no-map-gw), so nothing listening on the node's loopback is reachable through it.
 */
export const GUEST_NETWORK = {
  address: '10.0.2.15',
  prefixLength: 24,
  gateway: '10.0.2.2',
  dns: '10.0.2.3',
} as const;

/** One passt process per VM, serving its QEMU over a unix socket. */
export interface PasstLaunch {
  socket: string;
  pidFile: string;
  /** The node's mesh address (VM_WG_IP): every forward listens there, never on all interfaces. */
  forwardAddress: string;
  /** What is forwarded from forwardAddress into the guest, SSH first. */
  forwards: readonly HostPort[];
  /** The host interface passt takes its routes from; passt's own choice (the default route's) when absent. */
  interfaceName?: string;
  /** As root: the uid passt keeps (it would switch to nobody, who cannot reach the run folder). */
  runAs?: number;
}

/**
 * The passt command line of a VM. `--one-off`: passt quits once its QEMU closes the socket, so it
 * lives exactly as long as the QEMU that connected to it. Each forward is its own `-t`/`-u`,
 * bound to forwardAddress; `none` for a protocol without forwards (else passt mirrors the TCP
 * ports over UDP). Only validated integers, the agent's own paths and addresses reach it.
 */
export function passtArgs(launch: PasstLaunch): string[] {
  const forwards = launch.forwards.flatMap(({ protocol, host_port, guest_port }) => [
    protocol === 'udp' ? '--udp-ports' : '--tcp-ports',
    `${launch.forwardAddress}/${host_port}:${guest_port}`,
  ]);
  const none = (protocol: 'tcp' | 'udp'): string[] =>
    launch.forwards.some((forward) => forward.protocol === protocol)
      ? []
      : [`--${protocol}-ports`, 'none'];
  return [
    '--one-off',
    '--quiet',
    '--no-map-gw',
    '--address',
    GUEST_NETWORK.address,
    '--netmask',
    String(GUEST_NETWORK.prefixLength),
    '--gateway',
    GUEST_NETWORK.gateway,
    '--dns-forward',
    GUEST_NETWORK.dns,
    ...(launch.interfaceName === undefined ? [] : ['--interface', launch.interfaceName]),
    ...(launch.runAs === undefined ? [] : ['--runas', String(launch.runAs)]),
    '--socket',
    launch.socket,
    '--pid',
    launch.pidFile,
    ...forwards,
    ...none('tcp'),
    ...none('udp'),
  ];
}

/** The value after `flag` (or its short form) in a command line. */
function valueOf(args: readonly string[], ...flags: string[]): string | undefined {
  const index = args.findIndex((arg) => flags.includes(arg));
  return index >= 0 ? args[index + 1] : undefined;
}

/** The forwards passtArgs put on the command line (SSH first), read back from it. */
export function passtForwards(args: readonly string[]): HostPort[] {
  const forwards: HostPort[] = [];
  for (const [index, arg] of args.entries()) {
    const protocol = { '--tcp-ports': 'tcp', '-t': 'tcp', '--udp-ports': 'udp', '-u': 'udp' }[arg];
    const ports = /^(?:[^/]*\/)?(\d{1,5}):(\d{1,5})$/.exec(args[index + 1] ?? '');
    if (protocol === undefined || !ports) continue;
    forwards.push({
      host_port: Number(ports[1]),
      guest_port: Number(ports[2]),
      protocol: protocol as 'tcp' | 'udp',
    });
  }
  return forwards.slice(0, MAX_HOST_PORTS_PER_VM);
}

/**
 * Whether a process is the passt this agent started for the socket given: its user, its program
 * (passt, or the passt.avx2 Debian's passt runs) and that socket and pidfile on its command line.
 * Anyone can fake a command line, so it must also be the agent's user's.
 */
export function isPasstOf(
  { args, uid }: HostProcess,
  agentUid: number,
  socket: string,
  pidFile: string,
): boolean {
  return (
    uid === agentUid &&
    /^passt(\.avx2)?$/.test(basename(args[0] ?? '')) &&
    valueOf(args, '--socket', '-s') === socket &&
    valueOf(args, '--pid', '-P') === pidFile
  );
}
