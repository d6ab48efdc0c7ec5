import {
  Controller,
  ExecutionContext,
  ForbiddenException,
  Get,
  UnauthorizedException,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  BearerTokenGuard,
  BearerTokens,
  OwnCredentials,
  RequiresToken,
  TenantScoped,
  callerOf,
  recordedCallerOf,
} from './bearer-token.guard';
import { TenantTokens, deriveTenantToken } from './tenant-token';

@Controller()
class Routes {
  @Get()
  @RequiresToken('api')
  api(): void {}

  @Get()
  undeclared(): void {}

  @Get()
  @OwnCredentials()
  ownGuard(): void {}
}

@OwnCredentials()
@Controller()
class OwnRoutes {
  @Get()
  page(): void {}
}

/** The context of a request to `target`'s method `name`. */
function context(
  target: { prototype: object },
  name: string,
  authorization?: string,
): ExecutionContext {
  const response = { setHeader: jest.fn() };
  const handler: unknown = Reflect.get(target.prototype, name);
  return {
    getHandler: () => handler,
    getClass: () => target,
    switchToHttp: () => ({
      getRequest: () => ({ headers: { authorization } }),
      getResponse: () => response,
    }),
  } as unknown as ExecutionContext;
}

describe('BearerTokenGuard', () => {
  const guard = new BearerTokenGuard(
    new Reflector(),
    new BearerTokens('test', { api: 'api-token-1a7f3c9e5b0d2864' }),
  );

  it('asks a declared route for its token', () => {
    expect(() => guard.canActivate(context(Routes, 'api'))).toThrow(
      'this route needs the API token',
    );
    expect(guard.canActivate(context(Routes, 'api', 'Bearer api-token-1a7f3c9e5b0d2864'))).toBe(
      true,
    );
  });

  it('refuses a route that declares nothing once a token is set', () => {
    expect(() => guard.canActivate(context(Routes, 'undeclared'))).toThrow(
      'no token opens this route',
    );
  });

  it('leaves a route or controller marked OwnCredentials to its own guard', () => {
    expect(guard.canActivate(context(Routes, 'ownGuard'))).toBe(true);
    expect(guard.canActivate(context(OwnRoutes, 'page'))).toBe(true);
  });
});

describe('BearerTokenGuard with tenant tokens', () => {
  @RequiresToken('api')
  @Controller()
  class TenantRoutes {
    @Get()
    @TenantScoped()
    vms(): void {}

    @Get()
    fleet(): void {}
  }
  @RequiresToken('node')
  @Controller()
  class NodeRoutes {
    @Get()
    @TenantScoped()
    heartbeat(): void {}
  }

  const secret = 'x'.repeat(40);
  const guard = new BearerTokenGuard(
    new Reflector(),
    new BearerTokens(
      'test',
      { api: 'api-token-1a7f3c9e5b0d2864', node: 'node-token-5c2e8a0f1b3d7946' },
      [],
      [],
      new TenantTokens(secret, ['acme']),
    ),
  );
  /** A request to `target`'s `name` with `token`, and the request object the guard marks. */
  function call(target: { prototype: object }, name: string, token: string) {
    const request = { headers: { authorization: `Bearer ${token}` } };
    const outcome = (): boolean =>
      guard.canActivate({
        getHandler: () => Reflect.get(target.prototype, name) as unknown,
        getClass: () => target,
        switchToHttp: () => ({
          getRequest: () => request,
          getResponse: () => ({ setHeader: jest.fn() }),
        }),
      } as unknown as ExecutionContext);
    return { request, outcome };
  }
  const acme = deriveTenantToken(secret, 'acme');

  it("takes a tenant's token on a TenantScoped route as that tenant, the API token as the operator", () => {
    const asTenant = call(TenantRoutes, 'vms', acme);
    expect(asTenant.outcome()).toBe(true);
    expect(callerOf(asTenant.request)).toEqual({ kind: 'tenant', tenantId: 'acme' });
    const asOperator = call(TenantRoutes, 'vms', 'api-token-1a7f3c9e5b0d2864');
    expect(asOperator.outcome()).toBe(true);
    expect(recordedCallerOf(asOperator.request)).toEqual({ kind: 'operator' });
  });

  it("refuses a tenant's token (403) on any other API route, and as a node token anywhere (401)", () => {
    const fleet = call(TenantRoutes, 'fleet', acme);
    expect(fleet.outcome).toThrow(ForbiddenException);
    expect(fleet.outcome).toThrow("tenant acme's token opens only its own VMs");
    // Named in the audit log all the same.
    expect(recordedCallerOf(fleet.request)).toEqual({ kind: 'tenant', tenantId: 'acme' });
    expect(call(NodeRoutes, 'heartbeat', acme).outcome).toThrow(UnauthorizedException);
    expect(call(TenantRoutes, 'vms', deriveTenantToken(secret, 'globex')).outcome).toThrow(
      UnauthorizedException,
    );
  });
});
