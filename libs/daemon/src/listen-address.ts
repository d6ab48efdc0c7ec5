import { isIP } from 'node:net';
import { ValidateBy } from 'class-validator';
import { isUnicastAddress } from '@app/api-basics';

/** Where a side listener (the metrics endpoint) binds: an IP literal and a port. */
export interface ListenAddress {
  host: string;
  port: number;
}

const HOST_PORT = /^(?:\[([0-9A-Fa-f:.]+)\]|([0-9.]+)):(\d{1,5})$/;

/**
 * `host:port` with a unicast IP address of this host as host (IPv6 in brackets, e.g.
 * `[::1]:9100`) and a port from 1 to 65535; undefined for anything else (names, 0.0.0.0, ::,
 * multicast, broadcast). What is bound is exactly what was written.
 */
export function parseListenAddress(value: string): ListenAddress | undefined {
  const match = HOST_PORT.exec(value);
  if (!match) return undefined;
  const host = match[1] ?? match[2];
  const port = Number(match[3]);
  const family = isIP(host);
  if (family === 0 || (match[1] !== undefined) !== (family === 6)) return undefined;
  if (port < 1 || port > 65535) return undefined;
  // One host's own address: 0.0.0.0 or :: would put an unauthenticated /metrics on every network.
  if (!isUnicastAddress(host)) return undefined;
  return { host, port };
}

export function formatListenAddress({ host, port }: ListenAddress): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Validates a `host:port` environment variable; the message names the variable. */
export function IsListenAddress(): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isListenAddress',
      validator: {
        validate: (value: unknown) =>
          typeof value === 'string' && parseListenAddress(value) !== undefined,
      },
    },
    {
      message:
        '$property must be host:port with a unicast IP address of this host (not 0.0.0.0 or ::), such as 127.0.0.1:9100 or [::1]:9100',
    },
  );
}
