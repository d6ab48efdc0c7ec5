import { NestFactory } from '@nestjs/core';
import type { NestApplicationOptions } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import {
  DaemonLogger,
  addTokenSchemes,
  configureDaemonHttp,
  daemonDocumentBuilder,
  finishDaemonDocument,
} from '@app/daemon';
import { DEFAULT_SPAWN_PORT, EXAMPLE_WG_IP } from '@app/fleet-domain';
import { VmHostConfig, VmHostConfigError } from './config/vm-host.config';
import { HeartbeatScheduler } from './heartbeat/heartbeat.scheduler';
import { VmHostAppModule } from './vm-host-app.module';
import { VmsService } from './vms/vms.service';

/** Options every agent app is created with: main, the tests and the OpenAPI generator. */
export const VM_HOST_APP_OPTIONS: NestApplicationOptions = { bodyParser: false };

export function buildVmHostOpenApiDocument(app: NestExpressApplication): OpenAPIObject {
  const builder = daemonDocumentBuilder({
    title: 'service-vm-host',
    description:
      "PPN node agent's local API, on VM_WG_IP:VM_SPAWN_PORT (default 9204): the fleet controller asks it to start and destroy VMs. With VM_FLEET_NODE_TOKEN set on the agent, every operation needs it as a bearer token (the controller sends it); unset, they are open.",
    server: {
      url: 'http://{wg_ip}:{spawn_port}',
      description: "A node's agent, on its WireGuard address.",
      variables: {
        wg_ip: {
          default: EXAMPLE_WG_IP,
          description: "The node's VM_WG_IP (an IPv6 address goes in brackets).",
        },
        spawn_port: {
          default: String(DEFAULT_SPAWN_PORT),
          description: "The node's VM_SPAWN_PORT.",
        },
      },
    },
    tags: { vms: "This node's VMs: spawn, list, destroy." },
  });
  const config = addTokenSchemes(builder, ['node']).build();
  return finishDaemonDocument(SwaggerModule.createDocument(app, config));
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
