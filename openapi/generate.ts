/**
 * Writes the committed OpenAPI documents from the code (`npm run openapi`), or with --check
 * fails when a committed file differs from what the code produces (`npm run openapi:check`).
 * Apps are built in preview mode: nothing is instantiated, no port is bound.
 */
import 'reflect-metadata';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import openapiTS, { astToString } from 'openapi-typescript';
import { format } from 'prettier';
import { FLEET_APP_OPTIONS, buildFleetOpenApiDocument } from '../apps/fleet/src/bootstrap';
import { FleetAppModule } from '../apps/fleet/src/fleet-app.module';

const ROOT = join(__dirname, '..');

/** Recursively sorted keys, so the committed document only changes when the API does. */
export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}

export async function renderFleetDocument(): Promise<string> {
  const app = await NestFactory.create<NestExpressApplication>(FleetAppModule, {
    ...FLEET_APP_OPTIONS,
    preview: true,
    logger: false,
  });
  try {
    return JSON.stringify(sortKeys(buildFleetOpenApiDocument(app)), null, 2) + '\n';
  } finally {
    await app.close();
  }
}

/** TypeScript types of a document's paths, for an openapi-fetch client on the other side. */
async function renderClientTypes(document: string, source: string): Promise<string> {
  const ast = await openapiTS(JSON.parse(document) as Parameters<typeof openapiTS>[0]);
  const banner = `// Generated from ${source} by \`npm run openapi\`. Do not edit.\n`;
  const prettierOptions = (
    JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { prettier: object }
  ).prettier;
  return format(banner + astToString(ast), { ...prettierOptions, parser: 'typescript' });
}

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  const fleetDocument = await renderFleetDocument();
  const outputs: Array<{ path: string; content: string }> = [
    { path: 'openapi/fleet.openapi.json', content: fleetDocument },
    {
      path: 'apps/vm-host/src/heartbeat/fleet-api.generated.ts',
      content: await renderClientTypes(fleetDocument, 'openapi/fleet.openapi.json'),
    },
  ];
  const drifted: string[] = [];
  for (const { path, content } of outputs) {
    const file = join(ROOT, path);
    if (check) {
      const committed = await readFile(file, 'utf8').catch(() => '');
      if (committed !== content) drifted.push(path);
    } else {
      await writeFile(file, content);
      console.log(`wrote ${path}`);
    }
  }
  if (drifted.length > 0) {
    console.error(
      `OpenAPI drift: ${drifted.join(', ')} differ from the code; run \`npm run openapi\` and commit the result`,
    );
    process.exit(1);
  }
  if (check) console.log(`openapi:check: ${outputs.length} file(s) match the code`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
