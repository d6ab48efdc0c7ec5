import {
  CanActivate,
  ExecutionContext,
  ForbiddenException,
  Injectable,
  SetMetadata,
  UnauthorizedException,
  applyDecorators,
  createParamDecorator,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { DocumentBuilder } from '@nestjs/swagger';
import { ApiSecurity } from '@app/api-basics';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import { ApiErrors, ErrorCase } from './api-errors';
import { RouteMetadataMemo } from './route-metadata.memo';

/** The two credentials of a fleet: what agents and the controller share, and the operators'. */
export type TokenRole = 'node' | 'api';

export const TOKEN_ROLES: Readonly<
  Record<TokenRole, { variable: string; scheme: string; name: string }>
> = {
  node: { variable: 'VM_FLEET_NODE_TOKEN', scheme: 'node-token', name: 'node token' },
  api: { variable: 'VM_FLEET_API_TOKEN', scheme: 'api-token', name: 'API token' },
};

const TOKEN_ROLE = 'ppn:token-role';
const OWN_CREDENTIALS = 'ppn:own-credentials';
const TENANT_SCOPED = 'ppn:tenant-scoped';

/**
 * Who a request to an API-token route speaks for, as the guard found it: the operator (the API
 * token, or any caller while the API is open) or one tenant (its own token, see TenantTokens).
 */
export type Caller = { kind: 'operator' } | { kind: 'tenant'; tenantId: string };

export const OPERATOR: Caller = { kind: 'operator' };

/** Where the guard leaves the Caller on the request. */
const CALLER = Symbol('ppn:caller');

/** The request's Caller; the operator when the guard set none (open routes, an open API). */
export function callerOf(request: object): Caller {
  return recordedCallerOf(request) ?? OPERATOR;
}

/** The Caller a guard recorded, if any: undefined for a request refused before (the audit log). */
export function recordedCallerOf(request: object): Caller | undefined {
  return (request as { [CALLER]?: Caller })[CALLER];
}

const CALLER_RECORDED_BY_ROUTE = 'ppn:caller-recorded-by-route';

/**
 * Marks a route reached without any caller recorded by design, that gives nothing away then (a
 * console page: without a session it only redirects to /login, or on an open console issues the
 * operator's session): the tenant check of its VM (TenantVmCheck, after the route guards) lets it through.
 */
export function CallerRecordedByRoute(): MethodDecorator {
  return SetMetadata(CALLER_RECORDED_BY_ROUTE, true);
}

/** Whether a route is marked CallerRecordedByRoute. */
export function isCallerRecordedByRoute(reflector: Reflector, context: ExecutionContext): boolean {
  return (
    reflector.get<boolean | undefined>(CALLER_RECORDED_BY_ROUTE, context.getHandler()) === true
  );
}

/** Sets the request's Caller: for a guard of its own (the web console's sessions). */
export function setCallerOf(request: object, caller: Caller): void {
  (request as { [CALLER]?: Caller })[CALLER] = caller;
}

/** The Caller of the request, for a controller method (see callerOf). */
export const RequestCaller = createParamDecorator(
  (_data: unknown, context: ExecutionContext): Caller =>
    callerOf(context.switchToHttp().getRequest<Request>()),
);

/**
 * Marks a route of the API token that a tenant's token opens too: the route (or its service)
 * then confines the tenant to its own VMs. Any other API-token route refuses a tenant's token
 * (403), so a route added later fails closed.
 */
export function TenantScoped(): ClassDecorator & MethodDecorator {
  return SetMetadata(TENANT_SCOPED, true);
}

/** Which tenant a bearer token belongs to (the controller's TenantTokens). */
export interface TenantTokenLookup {
  tenantOf(presented: string): string | undefined;
}

/** A tenant's token on a route only the operator's opens. */
export function tenantRefusedMessage(tenantId: string): string {
  return `tenant ${tenantId}'s token opens only its own VMs (/v1/vms...): this route needs the API token (VM_FLEET_API_TOKEN)`;
}

/**
 * Declares that a controller judges its requests' credentials with a guard of its own (the
 * controller's web console: a session cookie taken for the API token, and a CSRF token), not
 * with a bearer token: the app's guard lets it through to that guard, which must then refuse
 * what the bearer guard would. Never in an OpenAPI document: such routes are excluded from it.
 */
export function OwnCredentials(): ClassDecorator & MethodDecorator {
  return SetMetadata(OWN_CREDENTIALS, true);
}

/** Why a route refused the request, for the 401 body and the OpenAPI example alike. */
function missingTokenMessage(role: TokenRole): string {
  const { variable, name } = TOKEN_ROLES[role];
  return `this route needs the ${name}: send Authorization: Bearer <${variable}>`;
}

function wrongTokenMessage(role: TokenRole): string {
  const { variable, name } = TOKEN_ROLES[role];
  return `the bearer token is not the ${name} this route needs (${variable})`;
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/**
 * Whether `presented` is `expected`, in constant time: both sides are hashed first, so neither
 * length nor content leaks.
 */
export function tokensMatch(expected: string, presented: string): boolean {
  return timingSafeEqual(digest(expected), digest(presented));
}

/** The token of an `Authorization: Bearer <token>` header; undefined without one. */
export function presentedBearerToken(header: string | undefined): string | undefined {
  return /^Bearer +([^\s]+) *$/i.exec(header ?? '')?.[1];
}

/**
 * The bearer token the request carries (undefined without one), for a route that checks it
 * itself once it has parsed the body: see `BearerTokens`' `checkedByRoute`.
 */
export const BearerCredential = createParamDecorator(
  (_data: unknown, context: ExecutionContext): string | undefined =>
    presentedBearerToken(context.switchToHttp().getRequest<Request>().headers.authorization),
);

/**
 * The tokens a daemon was configured with, by role. A role without a token is open (the
 * how-tos run without any). Only digests are kept for checking; the node token itself is kept
 * where the daemon must send it.
 */
export class BearerTokens {
  private readonly digests: Partial<Record<TokenRole, Buffer>> = {};
  private readonly outgoing: Partial<Record<TokenRole, string>> = {};

  constructor(
    /** The program name, as the realm of WWW-Authenticate. */
    readonly realm: string,
    tokens: Partial<Record<TokenRole, string | undefined>>,
    /** Roles whose token this daemon sends to the other daemon. */
    sends: readonly TokenRole[] = [],
    /**
     * Roles closed by a token that depends on who speaks (the controller's per-node tokens):
     * the guard only makes sure one is sent, and the route checks it once it has parsed the
     * body that says who speaks (with `BearerCredential`).
     */
    private readonly checkedByRoute: readonly TokenRole[] = [],
    /** Tenants' tokens, taken on API-token routes as that tenant (see TenantScoped). */
    readonly tenants?: TenantTokenLookup,
  ) {
    for (const [role, token] of Object.entries(tokens) as Array<[TokenRole, string | undefined]>) {
      if (token === undefined) continue;
      this.digests[role] = digest(token);
      if (sends.includes(role)) this.outgoing[role] = token;
    }
  }

  isSet(role: TokenRole): boolean {
    return this.digests[role] !== undefined || this.checkedByRoute.includes(role);
  }

  /** Whether the route, not the guard, judges the token of `role` (see the constructor). */
  isCheckedByRoute(role: TokenRole): boolean {
    return this.checkedByRoute.includes(role);
  }

  /** Constant time: both sides are hashed first, so neither length nor content leaks. */
  matches(role: TokenRole, presented: string): boolean {
    const expected = this.digests[role];
    return expected !== undefined && timingSafeEqual(expected, digest(presented));
  }

  /** The headers to send to the other daemon: `Authorization` when the role has a token. */
  headersFor(role: TokenRole): Record<string, string> {
    const token = this.outgoing[role];
    return token === undefined ? {} : { Authorization: `Bearer ${token}` };
  }

  /**
   * The one start-up warning line when some of `roles` have no token, saying what anyone who
   * reaches the port can do meanwhile; undefined when all are closed.
   */
  openWarning(exposed: Partial<Record<TokenRole, string>>): string | undefined {
    const open = (Object.entries(exposed) as Array<[TokenRole, string]>).filter(
      ([role]) => !this.isSet(role),
    );
    if (open.length === 0) return undefined;
    const what = open
      .map(([role, exposure]) => `without ${TOKEN_ROLES[role].variable}, ${exposure}`)
      .join('; ');
    const variables = open.map(([role]) => TOKEN_ROLES[role].variable).join(' and ');
    return `API open: ${what}. Set ${variables} (each also as <name>_FILE) to close it, see docs/securing.md`;
  }
}

/**
 * Declares the token a route (or every route of a controller) needs, for the guard and for the
 * OpenAPI document: the bearer scheme, optional as a whole ({}) because a daemon without that
 * token leaves the route open, and the 401 it then answers.
 */
export function RequiresToken(
  role: TokenRole,
  /** More 401s the route itself answers (such as a token that is not the sender's own). */
  ...moreRefusals: ErrorCase[]
): ClassDecorator & MethodDecorator {
  const { variable, scheme, name } = TOKEN_ROLES[role];
  const tenantRefusal: ErrorCase[] =
    role === 'api'
      ? [
          {
            name: 'tenant-token',
            when: "Only when VM_FLEET_TENANT_SECRET is set on the controller: a tenant's token on a route it does not open (anything but its own VMs).",
            error: new ForbiddenException(tenantRefusedMessage('acme')),
          },
        ]
      : [];
  return applyDecorators(
    SetMetadata(TOKEN_ROLE, role),
    ApiSecurity(scheme),
    ApiSecurity({}),
    ApiErrors(
      [],
      {
        name: 'no-token',
        when: `Only when ${variable} is set on this daemon: the request has no \`Authorization: Bearer <${name}>\`.`,
        error: new UnauthorizedException(missingTokenMessage(role)),
      },
      {
        name: 'wrong-token',
        when: `Only when ${variable} is set on this daemon: the request carries another token.`,
        error: new UnauthorizedException(wrongTokenMessage(role)),
      },
      ...tenantRefusal,
      ...moreRefusals,
    ),
  );
}

/** Declares each role's bearer scheme in an OpenAPI document (Swagger UI's Authorize button). */
export function addTokenSchemes(
  builder: DocumentBuilder,
  roles: readonly TokenRole[],
  /** A daemon's own words for a scheme, in place of the generic one. */
  descriptions: Partial<Record<TokenRole, string>> = {},
): DocumentBuilder {
  for (const role of roles) {
    const { variable, scheme, name } = TOKEN_ROLES[role];
    builder.addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'opaque',
        description:
          descriptions[role] ??
          `The ${name}, the value of ${variable}. Required by the operations that list it only when ${variable} is set on the daemon; unset, they are open.`,
      },
      scheme,
    );
  }
  return builder;
}

/** What the guard reads of a route's decorators (see RouteMetadataMemo). */
interface RouteCredentials {
  own: boolean;
  role: TokenRole | undefined;
  tenantScoped: boolean;
}

/**
 * The one credential check of a daemon, registered as APP_GUARD: each route needs the token of
 * the role it declares with @RequiresToken, when this daemon has that token. Any other token,
 * the other role's included, is refused alike (401): a token is proof of a role, not of who
 * sent it, so there is nothing to tell apart with a 403. A route that declares no role is
 * refused as soon as any token is set, so a forgotten declaration fails closed.
 */
@Injectable()
export class BearerTokenGuard implements CanActivate {
  private readonly routes: RouteMetadataMemo<RouteCredentials>;

  constructor(
    reflector: Reflector,
    private readonly tokens: BearerTokens,
  ) {
    this.routes = new RouteMetadataMemo((targets) => ({
      own: !!reflector.getAllAndOverride<boolean | undefined>(OWN_CREDENTIALS, targets),
      role: reflector.getAllAndOverride<TokenRole | undefined>(TOKEN_ROLE, targets),
      tenantScoped: !!reflector.getAllAndOverride<boolean | undefined>(TENANT_SCOPED, targets),
    }));
  }

  canActivate(context: ExecutionContext): boolean {
    const { own, role, tenantScoped } = this.routes.of(context);
    if (own) return true;
    if (role === undefined) {
      if (!this.tokens.isSet('node') && !this.tokens.isSet('api')) return true;
      return this.refuse(context, 'invalid_token', 'no token opens this route');
    }
    const request = context.switchToHttp().getRequest<Request>();
    if (!this.tokens.isSet(role)) {
      // An open API: whoever calls acts as the operator.
      if (role === 'api') setCallerOf(request, OPERATOR);
      return true;
    }
    const header = context.switchToHttp().getRequest<Request>().headers.authorization;
    const presented = presentedBearerToken(header);
    if (presented === undefined) {
      return this.refuse(context, undefined, missingTokenMessage(role));
    }
    // The route judges it once the body says who speaks; it answers its own 401.
    if (this.tokens.isCheckedByRoute(role)) return true;
    if (this.tokens.matches(role, presented)) {
      if (role === 'api') setCallerOf(request, OPERATOR);
      return true;
    }
    const tenantId = role === 'api' ? this.tokens.tenants?.tenantOf(presented) : undefined;
    if (tenantId === undefined) {
      return this.refuse(context, 'invalid_token', wrongTokenMessage(role));
    }
    // Recorded even when refused: the audit log names who was refused.
    setCallerOf(request, { kind: 'tenant', tenantId });
    if (!tenantScoped) {
      throw new ForbiddenException(tenantRefusedMessage(tenantId));
    }
    return true;
  }

  private refuse(context: ExecutionContext, error: string | undefined, message: string): never {
    // RFC 6750: no error code when no credentials were sent at all.
    const challenge = `Bearer realm="${this.tokens.realm}"${error ? `, error="${error}"` : ''}`;
    context.switchToHttp().getResponse<Response>().setHeader('WWW-Authenticate', challenge);
    throw new UnauthorizedException(message);
  }
}
