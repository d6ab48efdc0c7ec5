import { Controller, ExecutionContext, Get } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  BearerTokenGuard,
  BearerTokens,
  OwnCredentials,
  RequiresToken,
} from './bearer-token.guard';

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
