import type { NestExpressApplication } from '@nestjs/platform-express';
import { Router } from 'express';
import { pathsUnder } from './url-path';

/** An Express 5 router's layers, in order (the `router` package's `stack`). */
type WithStack = { stack: unknown[] };

/**
 * Runs `register`, which adds routes under `prefix` to the app's Express router (Swagger UI's
 * eight routes and its static files), and puts what it added behind one layer that only a
 * request whose path starts with `prefix` enters: every other request (a heartbeat) passes one
 * RegExp test there, in the router's own loop, instead of a path match per route. The routes
 * and their answers are unchanged, and so is their order among the app's other layers.
 */
export function routesBehindPrefix(
  app: NestExpressApplication,
  prefix: string,
  register: () => void,
): void {
  const router = (app.getHttpAdapter().getInstance() as unknown as { router: WithStack }).router;
  const before = router.stack.length;
  register();
  const inner = Router();
  (inner as unknown as WithStack).stack.push(...router.stack.splice(before));
  app.use(pathsUnder(prefix), inner);
}
