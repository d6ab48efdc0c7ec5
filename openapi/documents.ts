/**
 * The OpenAPI documents of both daemons, rendered from the code. Apps are built in preview
 * mode: nothing is instantiated, no port is bound.
 */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import {
  FLEET_APP_OPTIONS,
  buildFleetOpenApiDocument,
  buildFleetOpsApp,
  buildFleetOpsOpenApiDocument,
} from '../apps/fleet/src/bootstrap';
import { FleetAppModule } from '../apps/fleet/src/fleet-app.module';
import { VM_HOST_APP_OPTIONS } from '../apps/vm-host/src/bootstrap';
import { buildVmHostOpenApiDocument } from '../apps/vm-host/src/docs/vm-host.openapi';
import { VmHostConfig } from '../apps/vm-host/src/config/vm-host.config';
import { VmHostAppModule } from '../apps/vm-host/src/vm-host-app.module';

/** Recursively sorted keys, so a committed document only changes when the API does. */
export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}

async function render(
  create: () => Promise<NestExpressApplication>,
  build: (app: NestExpressApplication) => object,
): Promise<string> {
  const app = await create();
  try {
    return JSON.stringify(sortKeys(build(app)), null, 2) + '\n';
  } finally {
    await app.close();
  }
}

export function renderFleetDocument(): Promise<string> {
  return render(
    () =>
      NestFactory.create<NestExpressApplication>(FleetAppModule.forConfig(), {
        ...FLEET_APP_OPTIONS,
        preview: true,
        logger: false,
      }),
    buildFleetOpenApiDocument,
  );
}

/** The operations listener's document, its app built in preview on a main app in preview. */
export async function renderFleetOpsDocument(): Promise<string> {
  const fleet = await NestFactory.create<NestExpressApplication>(FleetAppModule.forConfig(), {
    ...FLEET_APP_OPTIONS,
    preview: true,
    logger: false,
  });
  try {
    return await render(
      () => buildFleetOpsApp(fleet, { preview: true, logger: false }),
      buildFleetOpsOpenApiDocument,
    );
  } finally {
    await fleet.close();
  }
}

export function renderVmHostDocument(): Promise<string> {
  return render(
    () =>
      NestFactory.create<NestExpressApplication>(VmHostAppModule.forConfig(new VmHostConfig()), {
        ...VM_HOST_APP_OPTIONS,
        preview: true,
        logger: false,
      }),
    buildVmHostOpenApiDocument,
  );
}
