import { DynamicModule, Global, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { BearerTokenGuard, BearerTokens, JsonErrorFilter, createValidationPipe } from '@app/daemon';
import { FleetConfig } from './config/fleet.config';
import { FLEET_ERROR_STATUSES } from './fleet-error.statuses';
import { FleetModule } from './fleet/fleet.module';
import { MetricsModule } from './metrics/metrics.module';
import { NodesModule } from './nodes/nodes.module';
import { VmsModule } from './vms/vms.module';

/**
 * The configuration and the tokens, for every module. The store of fleet state and its clock
 * come from NodesModule, which opens the store the configuration chose.
 */
@Global()
@Module({})
class FleetCoreModule {
  static forConfig(config: FleetConfig): DynamicModule {
    return {
      module: FleetCoreModule,
      providers: [
        { provide: FleetConfig, useValue: config },
        {
          // The controller checks both tokens and sends the node token to agents.
          provide: BearerTokens,
          useValue: new BearerTokens(
            'service-vm-fleet',
            { node: config.nodeToken, api: config.apiToken },
            ['node'],
          ),
        },
      ],
      exports: [FleetConfig, BearerTokens],
    };
  }
}

@Module({})
export class FleetAppModule {
  /** The whole controller; with no Redis URL, state lives in memory as the contract says. */
  static forConfig(config: FleetConfig = new FleetConfig()): DynamicModule {
    return {
      module: FleetAppModule,
      imports: [
        ScheduleModule.forRoot(),
        FleetCoreModule.forConfig(config),
        MetricsModule.forConfig(config, NodesModule),
        NodesModule,
        FleetModule,
        VmsModule,
      ],
      providers: [
        { provide: APP_GUARD, useClass: BearerTokenGuard },
        { provide: APP_PIPE, useFactory: createValidationPipe },
        { provide: APP_FILTER, useFactory: () => new JsonErrorFilter(FLEET_ERROR_STATUSES) },
      ],
    };
  }
}
