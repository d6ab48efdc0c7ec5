import { Global, Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { Clock, JsonErrorFilter, SystemClock, createValidationPipe } from '@app/fleet-domain';
import { NodesModule } from './nodes/nodes.module';
import { VmsModule } from './vms/vms.module';

@Global()
@Module({
  providers: [{ provide: Clock, useClass: SystemClock }],
  exports: [Clock],
})
class ClockModule {}

@Module({
  imports: [ScheduleModule.forRoot(), ClockModule, NodesModule, VmsModule],
  providers: [
    { provide: APP_PIPE, useFactory: createValidationPipe },
    { provide: APP_FILTER, useClass: JsonErrorFilter },
  ],
})
export class FleetAppModule {}
