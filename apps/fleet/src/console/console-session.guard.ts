import {
  CanActivate,
  ExecutionContext,
  ForbiddenException,
  Injectable,
  SetMetadata,
  UnauthorizedException,
  applyDecorators,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { CallerRecordedByRoute, Clock, OPERATOR, callerOf, setCallerOf } from '@app/daemon';
import { CSRF_HEADER, ConsoleSessions, SESSION_COOKIE, cookieValue } from './console-session';
import { CONSOLE_HEADERS, isSameOrigin } from '../operations/ops-listener.http';

/** How a console route is reached. */
export type ConsoleAccess =
  /** Anyone: the login page and form, the stylesheet and script. */
  | 'public'
  /** A page: the controller redirects to /login without a session (see ConsoleController). */
  | 'page'
  /** Data or an action: a session, and for a POST its CSRF token and the same origin. */
  | 'session';

const ACCESS = 'ppn:console-access';

export const ConsoleAccess = (access: ConsoleAccess): MethodDecorator =>
  access === 'page'
    ? applyDecorators(SetMetadata(ACCESS, access), CallerRecordedByRoute())
    : SetMetadata(ACCESS, access);

/** The request's session cookie when it is one the console issued and it has not expired. */
export function validSession(
  sessions: ConsoleSessions,
  req: Request,
  nowS: number,
): string | undefined {
  const session = cookieValue(req.headers.cookie, SESSION_COOKIE);
  return sessions.isValid(session, nowS) ? session : undefined;
}

/**
 * The console's credential check, in place of the bearer guard (the controller is marked
 * OwnCredentials): a session for data, and for every state-changing request its CSRF token in
 * X-CSRF-Token and no other site's Origin or Sec-Fetch-Site, or 403 before anything is done.
 */
@Injectable()
export class ConsoleSessionGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly sessions: ConsoleSessions,
    private readonly clock: Clock,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const req = http.getRequest<Request>();
    const res = http.getResponse<Response>();
    for (const [name, value] of Object.entries(CONSOLE_HEADERS)) res.setHeader(name, value);
    const access =
      this.reflector.get<ConsoleAccess | undefined>(ACCESS, context.getHandler()) ?? 'session';
    const stateChanging = req.method !== 'GET' && req.method !== 'HEAD';
    if (stateChanging && !isSameOrigin(req.headers)) {
      throw new ForbiddenException('refused: this request came from another site');
    }
    const session = validSession(this.sessions, req, this.clock.wallNow() / 1000);
    if (session !== undefined) {
      // Who the session speaks for, as the bearer guard records it: the routes, the check of a
      // VM's tenant (TenantVmInterceptor) and the audit log read it.
      const tenantId = this.sessions.tenantOf(session);
      setCallerOf(req, tenantId === undefined ? OPERATOR : { kind: 'tenant', tenantId });
    }
    if (access !== 'session') return true;
    if (session === undefined) {
      throw new UnauthorizedException('no console session, or it has expired: log in again');
    }
    if (stateChanging && !this.sessions.isCsrfTokenOf(session, headerOf(req, CSRF_HEADER))) {
      throw new ForbiddenException(
        "refused: the request does not carry this session's CSRF token; reload the page",
      );
    }
    return true;
  }
}

function headerOf(req: Request, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? undefined : value;
}

/** The tenant a request's session is confined to; undefined for the operator's. */
export function scopeOf(req: Request): string | undefined {
  const caller = callerOf(req);
  return caller.kind === 'tenant' ? caller.tenantId : undefined;
}
