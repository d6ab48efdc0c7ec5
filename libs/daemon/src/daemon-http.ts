import type { NestExpressApplication } from '@nestjs/platform-express';
import { MAX_BODY_BYTES } from '@app/fleet-domain';

/**
 * The HTTP setup both daemons share: JSON bodies up to 1 MiB, no ETag (listings are rebuilt
 * for every read, and hashing a 2 MB body would only slow them down), no banner header, and
 * the API's docs at /docs (served beside the API, not part of its document). How the docs are
 * served is the app's: the agent does not load @nestjs/swagger at run time.
 */
export function configureDaemonHttp(
  app: NestExpressApplication,
  serveDocs: (app: NestExpressApplication) => void,
): NestExpressApplication {
  app.useBodyParser('json', { limit: MAX_BODY_BYTES });
  app.set('etag', false);
  app.disable('x-powered-by');
  serveDocs(app);
  return app;
}

/**
 * Why a request to the other daemon failed, in a few words for a log line or a 502: a timeout,
 * the socket error behind fetch's "fetch failed" or node:http's own (with its code), or the
 * error itself.
 */
export function describeRequestFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && error.name === 'TimeoutError') {
    return `no answer within ${timeoutMs} ms`;
  }
  if (!(error instanceof Error)) return String(error);
  const ownCode = (error as { code?: unknown }).code;
  if (typeof ownCode === 'string') return `${ownCode}: ${error.message}`;
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${cause.message}` : cause.message;
  }
  return error.message;
}
