import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderFleetDocument } from '../../openapi/documents';
import { NODE_RECORD_FIELDS } from '../support/heartbeats';

interface OpenApiDocument {
  paths: Record<string, Record<string, unknown>>;
  components: {
    schemas: Record<string, { properties: Record<string, unknown>; required?: string[] }>;
  };
}

describe('the fleet OpenAPI document', () => {
  let document: OpenApiDocument;

  beforeAll(async () => {
    document = JSON.parse(await renderFleetDocument()) as OpenApiDocument;
  });

  it('lists exactly the seven routes of the contract', () => {
    const routes = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(routes.sort()).toEqual([
      'DELETE /v1/vms/{vm_id}',
      'GET /v1/fleet',
      'GET /v1/nodes',
      'GET /v1/nodes/{node_id}',
      'GET /v1/vms',
      'POST /v1/nodes/heartbeat',
      'POST /v1/vms',
    ]);
  });

  it('gives NodeRecord exactly its eight fields, all required', () => {
    const nodeRecord = document.components.schemas.NodeRecord;
    const fields = NODE_RECORD_FIELDS;
    expect(Object.keys(nodeRecord.properties).sort()).toEqual(fields);
    expect([...(nodeRecord.required ?? [])].sort()).toEqual(fields);
  });

  it('is the committed file (npm run openapi:check)', async () => {
    const committed = readFileSync(join(__dirname, '../../openapi/fleet.openapi.json'), 'utf8');
    expect(committed).toBe(await renderFleetDocument());
  });
});
