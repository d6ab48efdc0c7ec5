import {
  CanActivate,
  ExecutionContext,
  Injectable,
  SetMetadata,
  UnauthorizedException,
  applyDecorators,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { DocumentBuilder } from '@nestjs/swagger';
import { ApiSecurity } from '@app/fleet-domain';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import { ApiErrors } from './api-errors';

/** The two credentials of a fleet: what agents and the controller share, and the operators'. */
export type TokenRole = 'node' | 'api';

export const TOKEN_ROLES: Readonly<
  Record<TokenRole, { variable: string; scheme: string; name: string }>
> = {
  node: { variable: 'VM_FLEET_NODE_TOKEN', scheme: 'node-token', name: 'node token' },
  api: { variable: 'VM_FLEET_API_TOKEN', scheme: 'api-token', name: 'API token' },
};

const TOKEN_ROLE = 'ppn:token-role';

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
  ) {
    for (const [role, token] of Object.entries(tokens) as Array<[TokenRole, string | undefined]>) {
      if (token === undefined) continue;
      this.digests[role] = digest(token);
      if (sends.includes(role)) this.outgoing[role] = token;
    }
  }

  isSet(role: TokenRole): boolean {
    return this.digests[role] !== undefined;
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
    return `API open: ${what}. Set ${variables} (each also as <name>_FILE) to close it, see README "Securing a fleet"`;
  }
}

/**
 * Declares the token a route (or every route of a controller) needs, for the guard and for the
 * OpenAPI document: the bearer scheme, optional as a whole ({}) because a daemon without that
 * token leaves the route open, and the 401 it then answers.
 */
export function RequiresToken(role: TokenRole): ClassDecorator & MethodDecorator {
  const { variable, scheme, name } = TOKEN_ROLES[role];
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
    ),
  );
}

/** Declares each role's bearer scheme in an OpenAPI document (Swagger UI's Authorize button). */
export function addTokenSchemes(
  builder: DocumentBuilder,
  roles: readonly TokenRole[],
): DocumentBuilder {
  for (const role of roles) {
    const { variable, scheme, name } = TOKEN_ROLES[role];
    builder.addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'opaque',
        description: `The ${name}, the value of ${variable}. Required by the operations that list it only when ${variable} is set on the daemon; unset, they are open.`,
      },
      scheme,
    );
  }
  return builder;
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
  constructor(
    private readonly reflector: Reflector,
    private readonly tokens: BearerTokens,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const role = this.reflector.getAllAndOverride<TokenRole | undefined>(TOKEN_ROLE, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (role === undefined) {
      if (!this.tokens.isSet('node') && !this.tokens.isSet('api')) return true;
      return this.refuse(context, 'invalid_token', 'no token opens this route');
    }
    if (!this.tokens.isSet(role)) return true;
    const header = context.switchToHttp().getRequest<Request>().headers.authorization;
    const presented = /^Bearer +([^\s]+) *$/i.exec(header ?? '')?.[1];
    if (presented === undefined) {
      return this.refuse(context, undefined, missingTokenMessage(role));
    }
    if (!this.tokens.matches(role, presented)) {
      return this.refuse(context, 'invalid_token', wrongTokenMessage(role));
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
