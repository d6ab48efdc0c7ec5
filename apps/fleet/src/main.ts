#!/usr/bin/env node
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { exitCleanlyOnSignals, exitOnStartupFailure } from '@app/daemon';
import { FLEET_PORT } from '@app/fleet-domain';
import { createFleetApp } from './bootstrap';
import { loadFleetConfig, refuseArguments } from './config/fleet.config';

async function main(): Promise<void> {
  refuseArguments(process.argv.slice(2));
  const config = loadFleetConfig(process.env);
  const app = await createFleetApp(config);
  exitCleanlyOnSignals(app, 'Fleet');
  await app.listen(FLEET_PORT, '0.0.0.0');
  new Logger('Fleet').log(
    `service-vm-fleet listening on 0.0.0.0:${FLEET_PORT} (state ${config.redisUrlForLogs ? `shared in Redis at ${config.redisUrlForLogs}` : 'in memory'}; Swagger UI at /docs)`,
  );
}

main().catch((error: unknown) => exitOnStartupFailure('service-vm-fleet', error, process.env));
