import type { ExecutionContext } from '@nestjs/common';

/**
 * What a guard reads of a route's decorators, resolved once per route (its class and handler)
 * instead of per request: the Reflector walks reflect-metadata's maps for each key and target,
 * four look-ups per request for the bearer guard, for an answer that only changes when a class
 * is declared. A route's decorators are all applied when its class is declared, before Nest
 * maps it, so the first request of a route sees them all. Keyed by class, then handler: an
 * inherited handler under another class is a route of its own.
 */
export class RouteMetadataMemo<T> {
  private readonly byClass = new WeakMap<object, WeakMap<object, T>>();

  constructor(private readonly resolve: (targets: [Function, Function]) => T) {} // eslint-disable-line @typescript-eslint/no-unsafe-function-type

  of(context: ExecutionContext): T {
    const handler = context.getHandler();
    const routeClass = context.getClass();
    let byHandler = this.byClass.get(routeClass);
    if (byHandler === undefined) {
      byHandler = new WeakMap();
      this.byClass.set(routeClass, byHandler);
    }
    if (byHandler.has(handler)) return byHandler.get(handler) as T;
    const resolved = this.resolve([handler, routeClass]);
    byHandler.set(handler, resolved);
    return resolved;
  }
}
