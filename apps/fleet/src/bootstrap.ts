import { NestFactory } from '@nestjs/core';
import type { NestApplicationOptions } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { DaemonLogger, configureDaemonHttp } from '@app/daemon';
import { applyOpenApiDecorators } from '@app/fleet-domain';
import { FleetConfig } from './config/fleet.config';
import { FleetAppModule } from './fleet-app.module';

/** Options every fleet app is created with: main, the e2e tests and the OpenAPI generator. */
export const FLEET_APP_OPTIONS: NestApplicationOptions = { bodyParser: false };

export function buildFleetOpenApiDocument(app: NestExpressApplication): OpenAPIObject {
  applyOpenApiDecorators();
  const config = new DocumentBuilder()
    .setTitle('service-vm-fleet')
    .setDescription(
      'PPN fleet controller: node registry (enrolled by heartbeat, dropped after 30 s of silence), VM listing and advisory placement. Listens on port 9203.',
    )
    .setVersion('1')
    .build();
  return SwaggerModule.createDocument(app, config);
}

/** Everything that makes a Nest app the fleet controller, apart from listening. */
export function configureFleetApp(app: NestExpressApplication): NestExpressApplication {
  return configureDaemonHttp(app, (app) =>
    SwaggerModule.setup('docs', app, () => buildFleetOpenApiDocument(app)),
  );
}

export async function createFleetApp(
  config: FleetConfig,
  options: NestApplicationOptions = {},
): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(FleetAppModule.forConfig(config), {
    ...FLEET_APP_OPTIONS,
    logger: new DaemonLogger(config.logFormat),
    ...options,
  });
  return configureFleetApp(app);
}
