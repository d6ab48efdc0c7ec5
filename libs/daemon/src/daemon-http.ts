import { UnsupportedMediaTypeException } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import type { IncomingMessage, Server } from 'node:http';
import { isUtf8 } from 'node:buffer';
import { MAX_BODY_BYTES } from '@app/api-basics';
import { findCostlyJson } from './json-limits';
import { excerpt } from './printable';

/**
 * Both daemons' HTTP server timeouts, so a client that trickles its request a byte at a time
 * cannot hold a connection (and its memory) for long.
 */
export const DAEMON_HTTP_TIMEOUTS = {
  /** Every request header must have arrived within this (agents and curl send them at once). */
  headersMs: 10_000,
  /** The whole request, body included: 1 MiB in 30 s is 35 KB/s. */
  requestMs: 30_000,
  /** A kept-alive connection with no request in flight is closed after this. */
  keepAliveMs: 5_000,
  /** How often the server looks for requests past those limits (Node's default is 30 s). */
  checkEveryMs: 1_000,
} as const;

function isJsonMediaType(contentType: string | undefined): contentType is string {
  return contentType?.split(';')[0].trim().toLowerCase() === 'application/json';
}

/**
 * The charsets a Content-Type names, lower-cased (none: JSON is UTF-8, RFC 8259). Every one
 * is returned, so a second `charset=` cannot hide behind a first.
 */
function charsetsOf(contentType: string): string[] {
  return contentType
    .split(';')
    .slice(1)
    .map((parameter) => parameter.split('='))
    .filter(([name]) => name.trim().toLowerCase() === 'charset')
    .map(([, ...value]) => value.join('=').trim().toLowerCase());
}

function hasBody(req: IncomingMessage): boolean {
  return (
    req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0
  );
}

/**
 * A body is JSON in UTF-8, sent as it is: any Content-Encoding but identity, a Content-Type
 * other than application/json, or a charset other than UTF-8 is a 415 naming it. The daemons
 * decode nothing: a form or text body would otherwise reach validation as "every field missing",
 * and a UTF-16 body would be transcoded before the JSON cost limits could read it.
 */
function refuseBodiesOtherThanJson(
  rawBodyPaths: RegExp | undefined,
): (req: Request, res: Response, next: NextFunction) => void {
  return (req, res, next) => {
    // A route that reads its body itself as bytes (an agent's chunk of a VM's copy).
    if (
      rawBodyPaths?.test(req.path) &&
      (req.headers['content-type'] ?? '').trim().toLowerCase() === 'application/octet-stream' &&
      (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase() === 'identity'
    ) {
      return next();
    }
    refuseOtherThanJson(req, res, next);
  };
}

function refuseOtherThanJson(req: Request, _res: Response, next: NextFunction): void {
  if (!hasBody(req)) return next();
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity') {
    return next(
      new UnsupportedMediaTypeException(
        `Content-Encoding ${excerpt(encoding, 64)} is not supported: send the body unencoded`,
      ),
    );
  }
  const contentType = req.headers['content-type'];
  if (!isJsonMediaType(contentType)) {
    return next(
      new UnsupportedMediaTypeException(
        contentType
          ? `Content-Type ${excerpt(contentType, 100)} is not supported: send application/json`
          : 'a request body needs Content-Type: application/json',
      ),
    );
  }
  // Quoted parameters could hide a `;charset=` from this reading that body-parser then sees:
  // JSON's media type needs none, so they are refused rather than parsed two ways.
  if (/["\\]/.test(contentType)) {
    return next(
      new UnsupportedMediaTypeException(
        'Content-Type with quoted parameters is not supported: send application/json; charset=utf-8 or no charset',
      ),
    );
  }
  const charset = charsetsOf(contentType).find((name) => name !== 'utf-8' && name !== 'utf8');
  if (charset !== undefined) {
    return next(
      new UnsupportedMediaTypeException(
        `charset ${excerpt(charset, 64)} is not supported: send application/json in UTF-8`,
      ),
    );
  }
  next();
}

/**
 * body-parser's verify hook: a body that is not UTF-8 (JSON is, RFC 8259, whether or not a
 * charset is named: body-parser would decode it anyway, turning each bad byte into U+FFFD) or
 * over JSON_LIMITS is a 400 before JSON.parse sees it.
 */
function refuseCostlyJson(_req: IncomingMessage, _res: unknown, body: Buffer): void {
  if (!isUtf8(body)) {
    throw Object.assign(
      new Error(
        'request body is not valid UTF-8: JSON is sent in UTF-8 (a Latin-1 or other byte encoding is not taken)',
      ),
      { status: 400, type: 'entity.not.utf8' },
    );
  }
  const problem = findCostlyJson(body);
  if (problem) {
    throw Object.assign(new Error(`request body ${problem}`), {
      status: 400,
      type: 'entity.too.costly',
    });
  }
}

function limitSlowClients(server: Server): void {
  server.headersTimeout = DAEMON_HTTP_TIMEOUTS.headersMs;
  server.requestTimeout = DAEMON_HTTP_TIMEOUTS.requestMs;
  server.keepAliveTimeout = DAEMON_HTTP_TIMEOUTS.keepAliveMs;
  // createServer's `connectionsCheckingInterval` option, which Nest does not pass: Node reads
  // this property when the server starts listening.
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval =
    DAEMON_HTTP_TIMEOUTS.checkEveryMs;
}

/**
 * The HTTP setup both daemons share: JSON bodies only, unencoded, up to 1 MiB and within
 * JSON_LIMITS; server timeouts against slow clients; no ETag (listings are rebuilt for every
 * read, and hashing a 2 MB body would only slow them down), no banner header, and the API's docs
 * at /docs (served beside the API, not part of its document). How the docs are served is the
 * app's: the agent does not load @nestjs/swagger at run time.
 */
export function configureDaemonHttp(
  app: NestExpressApplication,
  serveDocs: (app: NestExpressApplication) => void,
  /** Paths whose routes read an `application/octet-stream` body themselves, as bytes. */
  rawBodyPaths?: RegExp,
): NestExpressApplication {
  app.use(refuseBodiesOtherThanJson(rawBodyPaths));
  app.useBodyParser('json', {
    limit: MAX_BODY_BYTES,
    inflate: false,
    type: (req: IncomingMessage) => isJsonMediaType(req.headers['content-type']),
    verify: refuseCostlyJson,
  });
  limitSlowClients(app.getHttpServer());
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
