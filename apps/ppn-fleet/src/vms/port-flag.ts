import { MIN_REQUESTED_HOST_PORT, type PublishedPortRequest } from '@app/fleet-domain';
import { InvalidArgument } from '../api/command-options';

const PORT_FLAG = /^(?:(\d{1,5}):)?(\d{1,5})(?:\/(tcp|udp))?$/;

/**
 * `--port [host_port:]guest_port[/tcp|udp]` (as `docker run -p` writes it, tcp by default):
 * `80/tcp`, `5353:53/udp`. A usage error naming the rule otherwise.
 */
export function parsePortFlag(value: string): PublishedPortRequest {
  const parsed = PORT_FLAG.exec(value);
  const guestPort = Number(parsed?.[2]);
  const hostPort = parsed?.[1] === undefined ? undefined : Number(parsed[1]);
  if (!parsed || guestPort < 1 || guestPort > 65_535) {
    throw new InvalidArgument(
      'It must be [host_port:]guest_port[/tcp|udp], e.g. 80/tcp or 5353:53/udp, ports from 1 to 65535.',
    );
  }
  if (hostPort !== undefined && (hostPort < MIN_REQUESTED_HOST_PORT || hostPort > 65_535)) {
    throw new InvalidArgument(
      `Its host_port must be from ${MIN_REQUESTED_HOST_PORT} to 65535 (the agent is unprivileged; docs/vms.md says how to get port 80).`,
    );
  }
  const protocol = parsed[3] === 'udp' ? 'udp' : 'tcp';
  return hostPort === undefined
    ? { guest_port: guestPort, protocol }
    : { guest_port: guestPort, protocol, host_port: hostPort };
}
