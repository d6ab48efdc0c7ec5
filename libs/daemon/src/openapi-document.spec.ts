import type { OpenAPIObject } from '@nestjs/swagger';
import { securedAsServed } from './openapi-document';

/** Two operations as @RequiresToken declares them, and a third that declares none. */
function document(): OpenAPIObject {
  return {
    openapi: '3.0.0',
    info: { title: 't', version: '1' },
    paths: {
      '/v1/nodes/heartbeat': {
        post: { responses: {}, security: [{ 'node-token': [] }, {}] },
      },
      '/v1/vms': {
        get: { responses: {}, security: [{ 'api-token': [] }, {}] },
        parameters: [],
      },
      '/v1/open': { get: { responses: {} } },
    },
    components: {
      schemas: { A: { type: 'object' } },
      securitySchemes: {
        'node-token': { type: 'http', scheme: 'bearer' },
        'api-token': { type: 'http', scheme: 'bearer' },
      },
    },
  };
}

describe('securedAsServed', () => {
  it('shows an open daemon without any lock: no security on an operation, no scheme', () => {
    const served = securedAsServed(document(), () => false);
    expect(served.paths['/v1/nodes/heartbeat'].post).toEqual({ responses: {} });
    expect(served.paths['/v1/vms'].get).toEqual({ responses: {} });
    expect(served.paths['/v1/vms'].parameters).toEqual([]);
    expect(served.paths['/v1/open'].get).toEqual({ responses: {} });
    expect(served.components).toEqual({ schemas: { A: { type: 'object' } } });
  });

  it('keeps the requirements and the scheme of each token the daemon has, and only those', () => {
    const served = securedAsServed(document(), (role) => role === 'api');
    expect(served.paths['/v1/nodes/heartbeat'].post?.security).toBeUndefined();
    expect(served.paths['/v1/vms'].get?.security).toEqual([{ 'api-token': [] }, {}]);
    expect(Object.keys(served.components?.securitySchemes ?? {})).toEqual(['api-token']);
  });

  it('leaves a daemon with every token as documented, and the document it was given untouched', () => {
    const given = document();
    expect(securedAsServed(given, () => true)).toEqual(document());
    securedAsServed(given, () => false);
    expect(given).toEqual(document());
  });
});
