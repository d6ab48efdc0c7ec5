#!/usr/bin/env node
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { FLEET_PORT, exitCleanlyOnSignals } from '@app/fleet-domain';
import { createFleetApp } from './bootstrap';

async function main(): Promise<void> {
  const app = await createFleetApp();
  exitCleanlyOnSignals(app, 'Fleet');
  await app.listen(FLEET_PORT, '0.0.0.0');
  new Logger('Fleet').log(
    `service-vm-fleet listening on 0.0.0.0:${FLEET_PORT} (state in memory; Swagger UI at /docs)`,
  );
}

main().catch((error: unknown) => {
  console.error(
    `service-vm-fleet failed to start: ${error instanceof Error ? error.message : String(error)}`,
  );
  process.exit(1);
});
