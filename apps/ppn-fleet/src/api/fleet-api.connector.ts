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

  /** The operations listener's endpoint and the API token, for its WebSocket (vm console --interactive). */
  opsConnection(opsEndpointOption?: string): { opsEndpoint: string; apiToken?: string } {
    const { opsEndpoint, apiToken } = readConnection(this.io.env, {
      opsEndpoint: opsEndpointOption,
    });
    this.warnOfTokenInTheClear(opsEndpoint, apiToken);
    return apiToken === undefined ? { opsEndpoint } : { opsEndpoint, apiToken };
  }

  /**
   * The operations listener of the controller `connect(endpointOption)` reaches, for what the
   * API's answers only gain from (the desired states `vms` shows): one given (--ops-endpoint,
   * VM_FLEET_OPS_ENDPOINT), or the default on this machine when the API is on this machine
   * too. Undefined otherwise: a default 127.0.0.1:9206 beside a remote API would be another
   * controller's.
   */
  connectOpsBeside(
    endpointOption?: string,
    opsEndpointOption?: string,
  ): FleetOpsApiClient | undefined {
    const given =
      opsEndpointOption !== undefined || (this.io.env.VM_FLEET_OPS_ENDPOINT ?? '').trim() !== '';
    const { endpoint, opsEndpoint } = readConnection(this.io.env, {
      endpoint: endpointOption,
      opsEndpoint: opsEndpointOption,
    });
    if (!given && !(isThisMachine(endpoint) && isThisMachine(opsEndpoint))) return undefined;
    return this.connectOps(opsEndpointOption);
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
  return new URL(endpoint).protocol === 'http:' && !isThisMachine(endpoint);
}

/** Whether `endpoint` is this machine: localhost, 127.0.0.0/8, ::1. */
export function isThisMachine(endpoint: string): boolean {
  const host = new URL(endpoint).hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}
