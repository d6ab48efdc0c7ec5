import type { INestApplication } from '@nestjs/common';
import { Logger } from '@nestjs/common';

/**
 * SIGTERM or SIGINT closes the app (scheduled jobs stop, the server stops listening, lifecycle
 * hooks run) and exits 0, as systemd expects of a clean stop. A second signal exits at once.
 */
export function exitCleanlyOnSignals(app: INestApplication, name: string): void {
  let closing = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (closing) process.exit(1);
    closing = true;
    const logger = new Logger(name);
    logger.log(`${signal} received, shutting down`);
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error(`shutdown failed: ${error instanceof Error ? error.message : String(error)}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
