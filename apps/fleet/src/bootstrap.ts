import { NestFactory } from '@nestjs/core';
import type { NestApplicationOptions } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { DaemonLogger, addTokenSchemes, configureDaemonHttp } from '@app/daemon';
import { FleetConfig } from './config/fleet.config';
import { FleetAppModule } from './fleet-app.module';

/** Options every fleet app is created with: main, the e2e tests and the OpenAPI generator. */
export const FLEET_APP_OPTIONS: NestApplicationOptions = { bodyParser: false };

export function buildFleetOpenApiDocument(app: NestExpressApplication): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setTitle('service-vm-fleet')
    .setDescription(
      'PPN fleet controller: node registry (enrolled by heartbeat, dropped after 30 s of silence), VM listing and advisory placement. Listens on port 9203. Tokens are opt-in: with VM_FLEET_NODE_TOKEN set, heartbeats need it as a bearer token; with VM_FLEET_API_TOKEN set, every other operation needs that one. Unset, the operations are open.',
    )
    .setVersion('1');
  const config = addTokenSchemes(builder, ['node', 'api']).build();
  return SwaggerModule.createDocument(app, config);
}

/** Everything that makes a Nest app the fleet controller, apart from listening. */
export function configureFleetApp(app: NestExpressApplication): NestExpressApplication {
  return configureDaemonHttp(app, buildFleetOpenApiDocument);
}

export async function createFleetApp(
  config: FleetConfig,
  options: NestApplicationOptions = {},
): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(FleetAppModule.forConfig(config), {
    ...FLEET_APP_OPTIONS,
    logger: new DaemonLogger(),
    ...options,
  });
  return configureFleetApp(app);
}
