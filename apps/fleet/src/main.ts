#!/usr/bin/env node
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import {
  BearerTokens,
  exitCleanlyOnSignals,
  exitOnStartupFailure,
  formatListenAddress,
  notifyServiceReady,
} from '@app/daemon';
import { FLEET_PORT } from '@app/fleet-domain';
import { createFleetApp, createFleetOpsApp, listenForOperators } from './bootstrap';
import { loadFleetConfig, refuseArguments } from './config/fleet-config.load';
import { NodeTokens } from './nodes/node-tokens';

async function main(): Promise<void> {
  refuseArguments(process.argv.slice(2));
  const config = loadFleetConfig(process.env);
  const app = await createFleetApp(config);
  exitCleanlyOnSignals(app, 'Fleet');
  await app.listen(FLEET_PORT, '0.0.0.0');
  const logger = new Logger('Fleet');
  logger.log(
    `service-vm-fleet listening on 0.0.0.0:${FLEET_PORT} (state ${config.redisUrlForLogs ? `shared in Redis at ${config.redisUrlForLogs}` : config.etcdEndpoints ? `shared in etcd at ${config.etcdEndpoints.join(',')}` : 'in memory'}; Swagger UI at /docs)`,
  );
  const opsAddress = config.opsListenAddress;
  if (opsAddress) {
    await listenForOperators(await createFleetOpsApp(app), opsAddress);
    logger.log(
      `operations listener on ${formatListenAddress(opsAddress)} (web console at /; VM stop, start, restart, consoles; Swagger UI at /docs)`,
    );
  } else {
    logger.log('no operations listener (VM_FLEET_OPS_ADDR=off)');
  }
  const opsExposure = opsAddress
    ? ` and who reaches ${formatListenAddress(opsAddress)} can stop, start and restart them and read their consoles`
    : '';
  const open = app.get(BearerTokens).openWarning({
    node: `anyone who reaches port ${FLEET_PORT} can enroll a node or overwrite any node's record`,
    api: `anyone who reaches port ${FLEET_PORT} can list, create and delete every tenant's VMs${opsExposure}`,
  });
  if (open) logger.warn(open);
  for (const warning of app.get(NodeTokens).transitionWarnings()) logger.warn(warning);
  await notifyServiceReady('Fleet', `listening on 0.0.0.0:${FLEET_PORT}`);
}

main().catch((error: unknown) => exitOnStartupFailure('service-vm-fleet', error, process.env));
