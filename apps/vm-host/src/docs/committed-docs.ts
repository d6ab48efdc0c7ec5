import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Application, NextFunction, Request, Response } from 'express';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

const DOCUMENT = join('openapi', 'vm-host.openapi.json');

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>service-vm-host API</title></head>
<body><h1>service-vm-host API</h1>
<p>This agent's OpenAPI document: <a href="docs-json">/docs-json</a>. To keep the agent small,
Swagger UI is served by the fleet controller (port 9203, /docs), not here.</p>
</body></html>
`;

/**
 * The committed openapi/vm-host.openapi.json, found above this file both in the sources and in
 * dist/ (`npm run openapi:check` keeps it equal to what the code declares).
 */
export function committedDocumentPath(from = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, DOCUMENT);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`${DOCUMENT} not found above ${from}`);
  }
}

/**
 * The agent's docs without @nestjs/swagger at run time (it and Swagger UI cost memory on every
 * node): the committed document at /docs-json, and a page at /docs pointing to it.
 */
export function serveCommittedDocs(app: NestExpressApplication): void {
  const path = committedDocumentPath();
  const server = app.getHttpAdapter().getInstance() as Application;
  server.get('/docs-json', (_request: Request, response: Response, next: NextFunction) => {
    readFile(path).then((document) => response.type('application/json').send(document), next);
  });
  server.get('/docs', (_request: Request, response: Response) => {
    response.type('text/html').send(PAGE);
  });
}
