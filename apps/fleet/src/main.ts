#!/usr/bin/env node
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import {
  BearerTokens,
  exitCleanlyOnSignals,
  exitOnStartupFailure,
  notifyServiceReady,
} from '@app/daemon';
import { FLEET_PORT } from '@app/fleet-domain';
import { createFleetApp } from './bootstrap';
import { loadFleetConfig, refuseArguments } from './config/fleet.config';
import { NodeTokens } from './nodes/node-tokens';

async function main(): Promise<void> {
  refuseArguments(process.argv.slice(2));
  const config = loadFleetConfig(process.env);
  const app = await createFleetApp(config);
  exitCleanlyOnSignals(app, 'Fleet');
  await app.listen(FLEET_PORT, '0.0.0.0');
  const logger = new Logger('Fleet');
  logger.log(
    `service-vm-fleet listening on 0.0.0.0:${FLEET_PORT} (state ${config.redisUrlForLogs ? `shared in Redis at ${config.redisUrlForLogs}` : 'in memory'}; Swagger UI at /docs)`,
  );
  const open = app.get(BearerTokens).openWarning({
    node: `anyone who reaches port ${FLEET_PORT} can enroll a node or overwrite any node's record`,
    api: `anyone who reaches port ${FLEET_PORT} can list, create and delete every tenant's VMs`,
  });
  if (open) logger.warn(open);
  for (const warning of app.get(NodeTokens).transitionWarnings()) logger.warn(warning);
  await notifyServiceReady('Fleet', `listening on 0.0.0.0:${FLEET_PORT}`);
}

main().catch((error: unknown) => exitOnStartupFailure('service-vm-fleet', error, process.env));
