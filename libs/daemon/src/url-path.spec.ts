import express from 'express';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isRequestFor, pathsOtherThan, pathsUnder } from './url-path';

describe('isRequestFor', () => {
  const to = (url: string) => ({ url }) as IncomingMessage;

  it.each([
    ['/v1/nodes/heartbeat', true],
    ['/v1/nodes/heartbeat?x=1', true],
    ['/v1/nodes/heartbeat#a', true],
    ['http://controller:9203/v1/nodes/heartbeat', true],
    ['/v1/nodes/heartbeat/', false],
    ['/V1/nodes/heartbeat', false],
    ['/v1/nodes/heartbeats', false],
    ['/v1/nodes', false],
  ])('says a request for %j is for the path: %j', (url, expected) => {
    expect(isRequestFor(to(url), '/v1/nodes/heartbeat')).toBe(expected);
  });
});

describe('pathsUnder and pathsOtherThan, as the mount path of a middleware', () => {
  /**
   * The URLs (as the middleware saw them) of the requests the router handed it, of POSTs sent
   * for `targets`, each written on the request line as it is (a fragment, an absolute form).
   */
  async function entered(mountPath: RegExp, targets: string[]): Promise<string[]> {
    const seen: string[] = [];
    const app = express();
    app.use(mountPath, (req, _res, next) => {
      seen.push(req.url);
      next();
    });
    app.use((_req, res) => res.status(204).end());
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    try {
      for (const path of targets) {
        const sent = httpRequest({ host: '127.0.0.1', port, method: 'POST', path }).end();
        const [answer] = (await once(sent, 'response')) as [IncomingMessage];
        answer.resume();
        expect(answer.statusCode).toBe(204);
      }
    } finally {
      server.close();
    }
    return seen;
  }

  it('enters the middleware for the paths under a prefix only, their URL whole', async () => {
    const urls = ['/docs', '/docs/swagger-ui.css', '/docs-json?x=1', '/doc', '/', '/v1/docs'];
    expect(await entered(pathsUnder('/docs'), urls)).toEqual([
      '/docs',
      '/docs/swagger-ui.css',
      '/docs-json?x=1',
    ]);
  });

  it('enters the middleware for every path but the one named, whatever its query, fragment or host', async () => {
    const urls = [
      '/v1/nodes/heartbeat',
      '/v1/nodes/heartbeat?x=1',
      '/v1/nodes/heartbeat#x',
      'http://controller:9203/v1/nodes/heartbeat',
      '/v1/nodes/heartbeat/',
      '/v1/nodes/heartbeats',
      '/V1/nodes/heartbeat',
      '/v1/nodes',
    ];
    expect(await entered(pathsOtherThan('/v1/nodes/heartbeat'), urls)).toEqual([
      '/v1/nodes/heartbeat/',
      '/v1/nodes/heartbeats',
      '/V1/nodes/heartbeat',
      '/v1/nodes',
    ]);
  });

  it('reads the path named literally, not as a pattern', async () => {
    expect(await entered(pathsUnder('/a.b'), ['/axb', '/a.b'])).toEqual(['/a.b']);
    expect(await entered(pathsOtherThan('/a.b'), ['/axb', '/a.b'])).toEqual(['/axb']);
  });
});
