import { isIP } from 'node:net';
import { Injectable } from '@nestjs/common';
import { CliIo } from '../terminal/cli-io';
import { readConnection } from './connection.config';
import { FleetApiClient } from './fleet-api.client';
import { FleetOpsApiClient } from './fleet-ops-api.client';

/**
 * Makes the clients of one run from `--endpoint` / `--ops-endpoint` and the environment: the
 * API's, and the operations listener's.
 */
@Injectable()
export class FleetApiConnector {
  constructor(private readonly io: CliIo) {}

  connect(endpointOption?: string): FleetApiClient {
    // A ConfigurationError goes on to runCli, which makes it a usage error (exit 2).
    const { endpoint, apiToken } = readConnection(this.io.env, { endpoint: endpointOption });
    this.warnOfTokenInTheClear(endpoint, apiToken);
    return new FleetApiClient(endpoint, apiToken, this.io.fetch, (ms) => this.io.sleep(ms));
  }

  connectOps(opsEndpointOption?: string): FleetOpsApiClient {
    const { opsEndpoint, apiToken } = readConnection(this.io.env, {
      opsEndpoint: opsEndpointOption,
    });
    this.warnOfTokenInTheClear(opsEndpoint, apiToken);
    return new FleetOpsApiClient(opsEndpoint, apiToken, this.io.fetch);
  }

  private warnOfTokenInTheClear(endpoint: string, apiToken: string | undefined): void {
    if (apiToken !== undefined && sendsTokenInTheClear(endpoint)) {
      this.io.stderr.write(
        `ppn-fleet: warning: the API token goes unencrypted over http to ${new URL(endpoint).host}: use https, or the controller's WireGuard address\n`,
      );
    }
  }
}

/**
 * Whether a request to `endpoint` would carry the token readable by the network: plain http to
 * anything but this machine (localhost, 127.0.0.0/8, ::1).
 */
export function sendsTokenInTheClear(endpoint: string): boolean {
  const url = new URL(endpoint);
  if (url.protocol !== 'http:') return false;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return false;
  if (isIP(host) === 4) return !host.startsWith('127.');
  return host !== '::1';
}
