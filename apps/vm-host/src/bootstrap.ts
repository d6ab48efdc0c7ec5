import { NestFactory } from '@nestjs/core';
import type { NestApplicationOptions } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { DaemonLogger, configureDaemonHttp } from '@app/daemon';
import { VmHostConfig, VmHostConfigError } from './config/vm-host.config';
import { HeartbeatScheduler } from './heartbeat/heartbeat.scheduler';
import { QemuDriver } from './vms/qemu.driver';
import { MAX_SOCKET_PATH, VmFiles } from './vms/vm-files';
import { VmHostAppModule } from './vm-host-app.module';

/** Options every agent app is created with: main, the tests and the OpenAPI generator. */
export const VM_HOST_APP_OPTIONS: NestApplicationOptions = { bodyParser: false };

export function buildVmHostOpenApiDocument(app: NestExpressApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('service-vm-host')
    .setDescription(
      "PPN node agent's local API, on VM_WG_IP:VM_SPAWN_PORT (default 9204): the fleet controller asks it to start and destroy VMs.",
    )
    .setVersion('1')
    .build();
  return SwaggerModule.createDocument(app, config);
}

export function configureVmHostApp(app: NestExpressApplication): NestExpressApplication {
  return configureDaemonHttp(app, buildVmHostOpenApiDocument);
}

export async function createVmHostApp(
  config: VmHostConfig,
  options: NestApplicationOptions = {},
): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(VmHostAppModule.forConfig(config), {
    ...VM_HOST_APP_OPTIONS,
    logger: new DaemonLogger(),
    ...options,
  });
  return configureVmHostApp(app);
}

/**
 * Listens on VM_WG_IP:VM_SPAWN_PORT only (this API starts VMs: it must not face every
 * network), then starts heartbeating, so the controller never hears of an agent it cannot reach.
 */
export async function startVmHost(
  app: NestExpressApplication,
  config: VmHostConfig,
): Promise<void> {
  await prepareDiskDir(app, config);
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

/** VM_DISK_DIR is created if missing; not writable, or too long for QMP sockets, it is a start-up error. */
async function prepareDiskDir(app: NestExpressApplication, config: VmHostConfig): Promise<void> {
  const files = app.get(VmFiles);
  const longestSocket = files.qmpSocket('vm-0123456789abcdef');
  try {
    if (longestSocket.length > MAX_SOCKET_PATH) {
      throw new Error(`too long: QMP socket paths under it would exceed ${MAX_SOCKET_PATH} bytes`);
    }
    await files.prepare();
  } catch (error) {
    await app.close();
    throw new VmHostConfigError(
      `VM_DISK_DIR ${config.diskDir} is not usable: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  await app.get(QemuDriver).checkTools();
}
