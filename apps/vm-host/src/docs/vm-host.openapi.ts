import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { applyOpenApiDecorators } from '@app/fleet-domain';

/**
 * The agent's OpenAPI document, built from the code by the generator (openapi/documents.ts).
 * Never imported at run time: the agent serves the committed file (committed-docs.ts).
 */
export function buildVmHostOpenApiDocument(app: NestExpressApplication): OpenAPIObject {
  applyOpenApiDecorators();
  const config = new DocumentBuilder()
    .setTitle('service-vm-host')
    .setDescription(
      "PPN node agent's local API, on VM_WG_IP:VM_SPAWN_PORT (default 9204): the fleet controller asks it to start and destroy VMs.",
    )
    .setVersion('1')
    .build();
  return SwaggerModule.createDocument(app, config);
}
