import { Injectable } from '@nestjs/common';
import { ConfigurationError } from '@app/daemon';
import { CliIo } from './cli-io';
import { readConnection } from './connection.config';
import { CliFailure, ExitCode } from './exit-codes';
import { FleetApiClient } from './fleet-api.client';

/** Makes the API client of one run from `--endpoint` and the environment. */
@Injectable()
export class FleetApiConnector {
  constructor(private readonly io: CliIo) {}

  connect(endpointOption?: string): FleetApiClient {
    try {
      const { endpoint, apiToken } = readConnection(this.io.env, endpointOption);
      return new FleetApiClient(endpoint, apiToken, this.io.fetch, (ms) => this.io.sleep(ms));
    } catch (error) {
      if (error instanceof ConfigurationError) throw new CliFailure(error.message, ExitCode.Usage);
      throw error;
    }
  }
}
