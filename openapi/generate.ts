/**
 * Writes the committed OpenAPI documents and the typed clients generated from them
 * (`npm run openapi`), or with --check fails when a committed file differs from what the code
 * produces (`npm run openapi:check`).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import { format } from 'prettier';
import { renderFleetDocument, renderFleetOpsDocument, renderVmHostDocument } from './documents';

const ROOT = join(__dirname, '..');

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
  const fleetOpsDocument = await renderFleetOpsDocument();
  const vmHostDocument = await renderVmHostDocument();
  const outputs: Array<{ path: string; content: string }> = [
    { path: 'openapi/fleet.openapi.json', content: fleetDocument },
    { path: 'openapi/fleet-ops.openapi.json', content: fleetOpsDocument },
    { path: 'openapi/vm-host.openapi.json', content: vmHostDocument },
    {
      // The agent and the ppn-fleet CLI talk to the controller through this (as FleetApi).
      path: 'libs/fleet-domain/src/wire/fleet-api.generated.ts',
      content: await renderClientTypes(fleetDocument, 'openapi/fleet.openapi.json'),
    },
    {
      // The ppn-fleet CLI's VM actions go through this (as FleetOpsApi).
      path: 'libs/fleet-domain/src/wire/fleet-ops-api.generated.ts',
      content: await renderClientTypes(fleetOpsDocument, 'openapi/fleet-ops.openapi.json'),
    },
    {
      // The controller dispatches to agents through this.
      path: 'apps/fleet/src/vms/vm-host-api.generated.ts',
      content: await renderClientTypes(vmHostDocument, 'openapi/vm-host.openapi.json'),
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

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
