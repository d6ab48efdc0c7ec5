import {
  BeforeApplicationShutdown,
  DynamicModule,
  Global,
  INestApplication,
  INestApplicationContext,
  Injectable,
  Module,
} from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { BearerTokenGuard, BearerTokens, JsonErrorFilter, createValidationPipe } from '@app/daemon';
import { FLEET_OPS_ERROR_STATUSES } from './fleet-error.statuses';
import { OperationsModule } from './operations/operations.module';
import { VmHostClient, VmHostClientSettings } from './vms/vm-host.client';
import { VmsService } from './vms/vms.service';

/** The realm of every Bearer challenge the controller sends, on either listener. */
export const FLEET_REALM = 'service-vm-fleet';

/**
 * The controller's own instances the operations listener works with, taken from the main app
 * (`app.get`): one store, one agents' client and one set of tokens for both listeners, so a
 * test's overrides (its clock, its agent timeout) hold on both.
 */
export interface FleetOpsShared {
  bearerTokens: BearerTokens;
  vms: VmsService;
  vmHost: VmHostClient;
  vmHostSettings: VmHostClientSettings;
}

/** The shared instances of `fleet`, the controller's main app. */
export function fleetOpsSharedFrom(fleet: INestApplicationContext): FleetOpsShared {
  return {
    bearerTokens: fleet.get(BearerTokens),
    vms: fleet.get(VmsService),
    vmHost: fleet.get(VmHostClient),
    vmHostSettings: fleet.get(VmHostClientSettings),
  };
}

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

/** The shared instances, for every module of the ops app. */
@Global()
@Module({})
class FleetOpsCoreModule {
  static with(shared: FleetOpsShared): DynamicModule {
    return {
      module: FleetOpsCoreModule,
      providers: [
        { provide: BearerTokens, useValue: shared.bearerTokens },
        { provide: VmsService, useValue: shared.vms },
        { provide: VmHostClient, useValue: shared.vmHost },
        { provide: VmHostClientSettings, useValue: shared.vmHostSettings },
      ],
      exports: [BearerTokens, VmsService, VmHostClient, VmHostClientSettings],
    };
  }
}

/**
 * The operations listener (VM_FLEET_OPS_ADDR): a Nest app of its own beside the API, whose
 * route table the contract fixes, with the same guard (VM_FLEET_API_TOKEN), validation and
 * error filter. Its routes are under /v1/; `/` is left for a web console.
 */
@Module({})
export class FleetOpsAppModule {
  static forShared(shared: FleetOpsShared): DynamicModule {
    return {
      module: FleetOpsAppModule,
      imports: [FleetOpsCoreModule.with(shared), OperationsModule],
      providers: [
        { provide: APP_GUARD, useClass: BearerTokenGuard },
        { provide: APP_PIPE, useFactory: createValidationPipe },
        {
          provide: APP_FILTER,
          useFactory: () => new JsonErrorFilter(FLEET_OPS_ERROR_STATUSES, FLEET_REALM),
        },
      ],
    };
  }
}
