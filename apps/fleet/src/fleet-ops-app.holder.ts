import { BeforeApplicationShutdown, INestApplication, Injectable } from '@nestjs/common';

/** The realm of every Bearer challenge the controller sends, on either listener. */
export const FLEET_REALM = 'service-vm-fleet';

/**
 * Holds the operations listener's app in the main app, so closing the controller (a signal,
 * a test's close) closes it first, before the store it reads is closed.
 */
@Injectable()
export class FleetOpsAppHolder implements BeforeApplicationShutdown {
  private app?: INestApplication;

  hold(app: INestApplication): void {
    this.app = app;
  }

  async beforeApplicationShutdown(): Promise<void> {
    const app = this.app;
    this.app = undefined;
    await app?.close();
  }
}
