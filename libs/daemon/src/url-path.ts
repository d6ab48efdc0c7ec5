import type { IncomingMessage } from 'node:http';
import parseurl from 'parseurl';

/**
 * Whether a request's path is `path` as the router reads it (its pathname: no query string,
 * no fragment, no host of an absolute-form target; case and a trailing slash count). Parsed
 * once per request: parseurl keeps its result on the request, and the router reuses it.
 */
export function isRequestFor(request: IncomingMessage, path: string): boolean {
  return parseurl(request)?.pathname === path;
}

/** `text` matched literally inside a RegExp. */
function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The path to mount a middleware at (`app.use(pathsUnder('/docs'), ...)`) so that the router
 * enters it only for request paths starting with `prefix`. The pattern is zero-width: unlike a
 * string mount path, it strips nothing from `req.url`. Every other request (a heartbeat) passes
 * the layer in the router's own loop, one RegExp test, without a call into it.
 */
export function pathsUnder(prefix: string): RegExp {
  return new RegExp(`^(?=${literal(prefix)})`);
}

/**
 * As pathsUnder, for every request but those for `path` itself, as isRequestFor reads them (a
 * query string or a fragment aside; another case or a trailing slash is another path).
 */
export function pathsOtherThan(path: string): RegExp {
  return new RegExp(`^(?!${literal(path)}$)`);
}
