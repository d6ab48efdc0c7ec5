import { createSocket } from 'node:dgram';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { HostPort, PortProtocol } from '@app/fleet-domain';

/**
 * Whether a port can be bound on an address right now, and a free one picked by the kernel:
 * the agent's look before it asks QEMU to forward from it.
 */
export interface PortProbe {
  isFree(host: string, port: number, protocol: PortProtocol): Promise<boolean>;
  /** A port the kernel picks as free on `host` right now (bound, then let go). */
  anyFree(host: string, protocol: PortProtocol): Promise<number>;
  /** The range anyFree's picks come from, as `low-high`; undefined when it cannot be read. */
  pickRange(): Promise<string | undefined>;
}

/** Where Linux keeps the range it picks free ports from (for port 0, TCP and UDP alike). */
const LOCAL_PORT_RANGE = '/proc/sys/net/ipv4/ip_local_port_range';

/** Binds and lets go: port 0 gives a free one. Resolves the port bound, or rejects. */
function bindOnce(host: string, port: number, protocol: PortProtocol): Promise<number> {
  return new Promise((resolve, reject) => {
    if (protocol === 'udp') {
      const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
      socket.once('error', (error) => {
        socket.close();
        reject(error);
      });
      socket.bind({ port, address: host, exclusive: true }, () => {
        const bound = socket.address().port;
        socket.close(() => resolve(bound));
      });
      return;
    }
    const server = createServer();
    server.once('error', reject);
    server.listen({ port, host, exclusive: true }, () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });
}

/** The probe over real sockets. */
export const SOCKET_PORT_PROBE: PortProbe = {
  isFree: (host, port, protocol) =>
    bindOnce(host, port, protocol).then(
      () => true,
      () => false,
    ),
  anyFree: (host, protocol) => bindOnce(host, 0, protocol),
  pickRange: async () => {
    const range = /^(\d+)\s+(\d+)$/.exec(
      (await readFile(LOCAL_PORT_RANGE, 'utf8').catch(() => '')).trim(),
    );
    return range ? `${range[1]}-${range[2]}` : undefined;
  },
};

/** The first of `ports` that cannot be bound on `host` now, or undefined when all can. */
export async function firstTakenPort(
  host: string,
  ports: readonly HostPort[],
  probe: PortProbe = SOCKET_PORT_PROBE,
): Promise<HostPort | undefined> {
  for (const port of ports) {
    if (!(await probe.isFree(host, port.host_port, port.protocol))) return port;
  }
  return undefined;
}
