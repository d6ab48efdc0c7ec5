import { NestFactory } from '@nestjs/core';
import type { NestApplicationOptions } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DaemonLogger, configureDaemonHttp } from '@app/daemon';
import { VmHostConfig, VmHostConfigError } from './config/vm-host.config';
import { serveCommittedDocs } from './docs/committed-docs';
import { HeartbeatScheduler } from './heartbeat/heartbeat.scheduler';
import { REPLICA_CHUNK_PATH } from './replicas/replicas.controller';
import { VmHostAppModule } from './vm-host-app.module';
import { VmsService } from './vms/vms.service';

/** Options every agent app is created with: main, the tests and the OpenAPI generator. */
export const VM_HOST_APP_OPTIONS: NestApplicationOptions = { bodyParser: false };

export function configureVmHostApp(app: NestExpressApplication): NestExpressApplication {
  return configureDaemonHttp(app, serveCommittedDocs, REPLICA_CHUNK_PATH);
}

export async function createVmHostApp(
  config: VmHostConfig,
  options: NestApplicationOptions = {},
): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(VmHostAppModule.forConfig(config), {
    ...VM_HOST_APP_OPTIONS,
    logger: new DaemonLogger(config.logFormat, config.nodeId),
    ...options,
  });
  return configureVmHostApp(app);
}

/**
 * Readies VM_DISK_DIR, then listens on VM_WG_IP:VM_SPAWN_PORT only (this API starts VMs: it must not face every
 * network), then starts heartbeating, so the controller never hears of an agent it cannot reach.
 */
export async function startVmHost(
  app: NestExpressApplication,
  config: VmHostConfig,
): Promise<void> {
  try {
    await app.get(VmsService).prepare();
  } catch (error) {
    await app.close();
    throw error;
  }
  try {
    await app.listen(config.spawnPort, config.wgIp);
  } catch (error) {
    await app.close();
    const code = (error as { code?: unknown }).code;
    if (code === 'EADDRNOTAVAIL') {
      throw new VmHostConfigError(`VM_WG_IP ${config.wgIp} is not an address of this host`);
    }
    if (code === 'EADDRINUSE') {
      throw new VmHostConfigError(
        `VM_SPAWN_PORT ${config.spawnPort} is already in use on ${config.wgIp}`,
      );
    }
    if (code === 'EACCES') {
      throw new VmHostConfigError(
        `VM_SPAWN_PORT ${config.spawnPort} may not be bound by this user on ${config.wgIp}`,
      );
    }
    throw error;
  }
  app.get(HeartbeatScheduler).start();
}
