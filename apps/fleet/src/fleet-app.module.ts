import { DynamicModule, Global, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import {
  BearerTokenGuard,
  BearerTokens,
  Clock,
  JsonErrorFilter,
  SystemClock,
  createValidationPipe,
} from '@app/daemon';
import { FleetConfig } from './config/fleet.config';
import { FLEET_ERROR_STATUSES } from './fleet-error.statuses';
import { FleetModule } from './fleet/fleet.module';
import { MetricsModule } from './metrics/metrics.module';
import { NodesModule } from './nodes/nodes.module';
import { RedisConnection } from './redis/redis-connection';
import { RedisClock } from './redis/redis.clock';
import { VmsModule } from './vms/vms.module';

/**
 * The Redis connection (null when state is in memory), the clock and the tokens, for every
 * module. With Redis, time is Redis TIME, so all controllers on it agree on staleness.
 */
@Global()
@Module({})
class FleetCoreModule {
  static forConfig(config: FleetConfig): DynamicModule {
    return {
      module: FleetCoreModule,
      providers: [
        {
          provide: RedisConnection,
          useFactory: () =>
            config.redisUrl
              ? new RedisConnection(config.redisUrl, config.redisUrlForLogs ?? '')
              : null,
        },
        {
          provide: Clock,
          useFactory: (redis: RedisConnection | null) =>
            redis ? new RedisClock(redis) : new SystemClock(),
          inject: [RedisConnection],
        },
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
      exports: [RedisConnection, Clock, BearerTokens],
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
        MetricsModule.forConfig(config),
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
