import type { ExecutionContext } from '@nestjs/common';
import { RouteMetadataMemo } from './route-metadata.memo';

class Parent {
  route(): void {}
}
class Child extends Parent {}

function context(routeClass: { prototype: object }): ExecutionContext {
  const handler: unknown = Reflect.get(routeClass.prototype, 'route');
  return { getHandler: () => handler, getClass: () => routeClass } as unknown as ExecutionContext;
}

describe('RouteMetadataMemo', () => {
  it('resolves each route once, an inherited handler under each class apart', () => {
    const resolve = jest.fn(([, routeClass]: [unknown, unknown]) =>
      routeClass === Child ? 'child' : undefined,
    );
    const memo = new RouteMetadataMemo(resolve);
    for (let i = 0; i < 3; i++) {
      expect(memo.of(context(Parent))).toBeUndefined();
      expect(memo.of(context(Child))).toBe('child');
    }
    expect(resolve).toHaveBeenCalledTimes(2);
    expect(resolve).toHaveBeenCalledWith([Reflect.get(Parent.prototype, 'route'), Child]);
  });
});
