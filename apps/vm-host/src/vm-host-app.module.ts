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
import { VmHostConfig } from './config/vm-host.config';
import { HeartbeatModule } from './heartbeat/heartbeat.module';
import { MetricsModule } from './metrics/metrics.module';
import { VM_HOST_ERROR_STATUSES } from './vm-host-error.statuses';
import { ReplicasModule } from './replicas/replicas.module';
import { MovesModule } from './moves/moves.module';
import { VmsModule } from './vms/vms.module';

/** The configuration read once at start-up, the clock and the tokens, for every module of the agent. */
@Global()
@Module({})
class VmHostCoreModule {
  static forConfig(config: VmHostConfig): DynamicModule {
    return {
      module: VmHostCoreModule,
      providers: [
        { provide: VmHostConfig, useValue: config },
        { provide: Clock, useClass: SystemClock },
        {
          // The agent checks the node token on the controller's calls and sends it on heartbeats.
          provide: BearerTokens,
          useValue: new BearerTokens('service-vm-host', { node: config.nodeToken }, ['node']),
        },
      ],
      exports: [VmHostConfig, Clock, BearerTokens],
    };
  }
}

@Module({})
export class VmHostAppModule {
  static forConfig(config: VmHostConfig): DynamicModule {
    return {
      module: VmHostAppModule,
      imports: [
        ScheduleModule.forRoot(),
        VmHostCoreModule.forConfig(config),
        MetricsModule.forConfig(config),
        VmsModule,
        ReplicasModule,
        MovesModule,
        HeartbeatModule,
      ],
      providers: [
        { provide: APP_GUARD, useClass: BearerTokenGuard },
        { provide: APP_PIPE, useFactory: createValidationPipe },
        { provide: APP_FILTER, useFactory: () => new JsonErrorFilter(VM_HOST_ERROR_STATUSES) },
      ],
    };
  }
}
