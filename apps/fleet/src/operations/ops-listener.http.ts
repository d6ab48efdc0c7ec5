import { ForbiddenException, MisdirectedException } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { isIP } from 'node:net';
import { excerpt } from '@app/daemon';
import { normalHostName } from '../config/fleet-config.values';

/**
 * The console's responses' headers: a strict Content-Security-Policy (the page's own script
 * and stylesheet only, no inline script or style, no frame), no caching, no referrer.
 */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

/**
 * A VM page's policy: the console's, with inline styles allowed, which its terminal (xterm.js)
 * injects as <style> elements and style attributes; its scripts are still the console's files
 * only (script-src 'self'), and an inline style cannot run script.
 */
export const VM_PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/**
 * Swagger UI's (/docs) headers: the console's, its policy loosened only for what the page is
 * made of (an inline stylesheet, inline SVG icons); its scripts are its own files still.
 */
export const DOCS_HEADERS: Readonly<Record<string, string>> = {
  ...CONSOLE_HEADERS,
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
};

/** A Host header's name part: without its port, IPv6 without brackets, lower case. */
export function hostNameOf(host: string): string {
  const bracketed = /^\[([^\]]*)\](?::\d*)?$/.exec(host);
  if (bracketed) return normalHostName(bracketed[1]);
  const colons = host.split(':').length - 1;
  return normalHostName(colons === 1 ? host.slice(0, host.indexOf(':')) : host);
}

function isLoopback(address: string): boolean {
  return address === '::1' || (isIP(address) === 4 && address.startsWith('127.'));
}

/** An address as a socket gives it: an IPv4 one reached over IPv6 is given as IPv4. */
function plainAddress(address: string | undefined): string {
  return (address ?? '').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
}

/**
 * Whether `host` (a Host header) names this listener: the address the connection came in on,
 * `localhost` when that is a loopback one (the controller's host, or an SSH tunnel's end), or
 * one of VM_FLEET_OPS_HOSTS. A page of another name (a DNS name rebound to this address) is not.
 */
export function isListenerHost(
  host: string | undefined,
  localAddress: string | undefined,
  extraNames: readonly string[],
): boolean {
  if (host === undefined || host === '') return false;
  const name = hostNameOf(host);
  const local = plainAddress(localAddress);
  if (name === local) return true;
  if (isLoopback(local) && (name === 'localhost' || isLoopback(name))) return true;
  return extraNames.includes(name);
}

/**
 * Whether a request's fetch metadata and Origin say it came from a page of this listener:
 * a browser sends Sec-Fetch-Site (same-origin for the console's own requests) and Origin on
 * every POST; a request that carries neither is not from a browser page.
 */
export function isSameOrigin(headers: {
  origin?: string;
  host?: string;
  'sec-fetch-site'?: string;
}): boolean {
  const site = headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return false;
  const origin = headers.origin;
  if (origin === undefined) return true;
  if (headers.host === undefined) return false;
  return origin === `http://${headers.host}` || origin === `https://${headers.host}`;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Whether a request carries what no page of another site can make a browser send without a
 * CORS preflight (which this listener never grants): Content-Type: application/json, an
 * Authorization header or the console's X-CSRF-Token.
 */
function isNotSimpleRequest(req: Request): boolean {
  const contentType = req.headers['content-type']?.split(';')[0].trim().toLowerCase();
  return (
    contentType === 'application/json' ||
    req.headers.authorization !== undefined ||
    req.headers['x-csrf-token'] !== undefined
  );
}

export const WRONG_HOST_MESSAGE = (host: string): string =>
  `Host ${host} is not a name of this listener: use its address, or add the name to VM_FLEET_OPS_HOSTS`;
export const CROSS_SITE_MESSAGE = 'refused: this request came from another site';
export const SIMPLE_REQUEST_MESSAGE =
  'refused: a state-changing request needs Content-Type: application/json (a body or not) or an Authorization header';

/**
 * What the operations listener checks before any route, the console's and the /v1 ones alike
 * (not the API on 9203, whose behaviour the contract fixes): the Host header names it (421
 * otherwise: DNS rebinding), and a request that changes anything comes from no other site and is
 * not one a cross-site form or no-CORS fetch could send (403). Swagger UI gets the console's
 * security headers.
 */
export function guardOpsListener(
  app: NestExpressApplication,
  extraNames: readonly string[],
  /** Whether VM_FLEET_API_TOKEN is set: a /v1 write without Authorization is then the guard's 401. */
  tokenRequired: boolean,
): NestExpressApplication {
  app.use((req: Request, res: Response, next: NextFunction) => {
    const host = req.headers.host;
    if (!isListenerHost(host, req.socket.localAddress, extraNames)) {
      return next(new MisdirectedException(WRONG_HOST_MESSAGE(excerpt(host ?? '', 100))));
    }
    if (req.path === '/docs' || req.path.startsWith('/docs/') || req.path.startsWith('/docs-')) {
      for (const [name, value] of Object.entries(DOCS_HEADERS)) res.setHeader(name, value);
    }
    if (SAFE_METHODS.has(req.method)) return next();
    if (!isSameOrigin(req.headers)) return next(new ForbiddenException(CROSS_SITE_MESSAGE));
    const bearersOnly = tokenRequired && req.path.startsWith('/v1/');
    if (!bearersOnly && !isNotSimpleRequest(req)) {
      return next(new ForbiddenException(SIMPLE_REQUEST_MESSAGE));
    }
    next();
  });
  return app;
}
