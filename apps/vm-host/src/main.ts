#!/usr/bin/env -S node --max-semi-space-size=1 --no-opt
// The agent idles between heartbeats: a 1 MB young generation and no optimizing compiler
// (TurboFan) keep it near 72 MB of RSS instead of 90, for little CPU (npm run bench).
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import {
  BearerTokens,
  exitCleanlyOnSignals,
  exitOnStartupFailure,
  notifyServiceReady,
} from '@app/daemon';
import { createVmHostApp, startVmHost } from './bootstrap';
import { loadVmHostConfig, refuseArguments } from './config/vm-host.config';

async function main(): Promise<void> {
  refuseArguments(process.argv.slice(2));
  const config = loadVmHostConfig(process.env);
  // Whatever the agent and the QEMU it starts create (disks, seed ISOs, sockets, logs) is private.
  process.umask(0o077);
  const app = await createVmHostApp(config);
  exitCleanlyOnSignals(app, 'VmHost');
  await startVmHost(app, config);
  const logger = new Logger('VmHost');
  logger.log(
    `service-vm-host node ${config.nodeId} listening on ${config.wgIp}:${config.spawnPort}, ${config.fleetEndpoints.length > 1 ? 'controllers (tried in turn)' : 'controller'} ${config.fleetEndpointForLogs}, every ${config.heartbeatIntervalS} s${config.reserved ? ', reserved' : ''}`,
  );
  const open = app.get(BearerTokens).openWarning({
    node: `anyone who reaches ${config.wgIp}:${config.spawnPort} can start, list and destroy this node's VMs`,
  });
  if (open) logger.warn(`node ${config.nodeId}: ${open}`);
  await notifyServiceReady(
    'VmHost',
    `node ${config.nodeId} listening on ${config.wgIp}:${config.spawnPort}`,
  );
}

main().catch((error: unknown) => exitOnStartupFailure('service-vm-host', error, process.env));
