import { ApiProperty } from '@app/api-basics';
import { IsIn, IsInt, IsOptional, Max, Min } from 'class-validator';

/** Most ports a create may publish beside SSH (which is always there and first). */
export const MAX_PUBLISHED_PORTS = 16;

/**
 * Lowest host_port a create may ask for: the agent runs unprivileged, so it cannot bind below
 * 1024 (docs/vms.md says how to get port 80 on the mesh with a firewall redirect).
 */
export const MIN_REQUESTED_HOST_PORT = 1024;

/** The guest port every VM's SSH forward reaches. */
export const SSH_GUEST_PORT = 22;

export type PortProtocol = 'tcp' | 'udp';

/** One port of the guest a create asks to publish on the node's mesh address (VM_WG_IP). */
export class PublishedPortRequest {
  @ApiProperty({ type: 'integer', minimum: 1, maximum: 65535, example: 80 })
  @Min(1)
  @Max(65535)
  @IsInt()
  guest_port!: number;

  @ApiProperty({ enum: ['tcp', 'udp'], example: 'tcp' })
  @IsIn(['tcp', 'udp'])
  protocol!: PortProtocol;

  @ApiProperty({
    type: 'integer',
    minimum: MIN_REQUESTED_HOST_PORT,
    maximum: 65535,
    required: false,
    example: 8080,
    description:
      'That exact port on the node (refused naming it when taken or reserved); absent: a free one is chosen.',
  })
  @IsOptional()
  @Min(MIN_REQUESTED_HOST_PORT)
  @Max(65535)
  @IsInt()
  host_port?: number;
}

/** `8080/tcp`: a port with its protocol, as refusals and the CLI name it. */
export function portName(port: number, protocol: PortProtocol): string {
  return `${port}/${protocol}`;
}

/**
 * Why a list of requested ports cannot be published together, naming the entry (`ports[2]`),
 * or undefined when it can: the same guest port and protocol twice, the same host port and
 * protocol twice, or guest 22/tcp (the SSH forward every VM has, first in host_ports).
 */
export function publishedPortsProblem(ports: readonly PublishedPortRequest[]): string | undefined {
  const guests = new Map<string, number>();
  const hosts = new Map<string, number>();
  for (const [index, port] of ports.entries()) {
    if (typeof port !== 'object' || port === null) continue;
    const { guest_port, protocol, host_port } = port;
    if (guest_port === SSH_GUEST_PORT && protocol === 'tcp') {
      return `ports[${index}].guest_port: 22/tcp is the VM's SSH forward, always published first; leave it out`;
    }
    const guest = portName(guest_port, protocol);
    const earlierGuest = guests.get(guest);
    if (earlierGuest !== undefined) {
      return `ports[${index}].guest_port: ${guest} is already asked for by ports[${earlierGuest}]`;
    }
    guests.set(guest, index);
    if (host_port === undefined || host_port === null) continue;
    const host = portName(host_port, protocol);
    const earlierHost = hosts.get(host);
    if (earlierHost !== undefined) {
      return `ports[${index}].host_port: ${host} is already asked for by ports[${earlierHost}]`;
    }
    hosts.set(host, index);
  }
  return undefined;
}

/**
 * A create's ports that cannot be published together (see publishedPortsProblem): a 400 from
 * either daemon, the message naming the entry. Judged by the services, not the validation pipe:
 * the pipe validates a list of objects item by item, so a rule across items is not seen there.
 */
export class PortsConflictError extends Error {}

/** Throws PortsConflictError when the create's ports cannot be published together. */
export function checkPublishedPorts(ports: readonly PublishedPortRequest[] | undefined): void {
  const problem = publishedPortsProblem(ports ?? []);
  if (problem !== undefined) throw new PortsConflictError(problem);
}
