import type { Request } from 'express';

/**
 * The request's address as Express's `req.ip` (Nest's @Ip()) gives it: with no proxy trusted
 * (the `trust proxy` setting at its default, false, as the controller leaves it) that is the
 * TCP peer's address, read at once instead of through req.ip's parse of X-Forwarded-For
 * (ignored then anyway), for every heartbeat. Any other setting goes through req.ip.
 */
export function peerAddressOf(request: Request): string | undefined {
  return request.app.get('trust proxy') === false ? request.socket.remoteAddress : request.ip;
}
