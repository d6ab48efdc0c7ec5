import { Module } from '@nestjs/common';
import { BearerTokens } from '@app/daemon';
import { VmHostConfig } from '../config/vm-host.config';
import { HostFactsModule } from '../host-facts/host-facts.module';
import { ReplicasModule } from '../replicas/replicas.module';
import { VmsModule } from '../vms/vms.module';
import { FleetClient } from './fleet.client';
import { HeartbeatScheduler } from './heartbeat.scheduler';
import { HeartbeatService } from './heartbeat.service';

@Module({
  imports: [VmsModule, ReplicasModule, HostFactsModule],
  providers: [
    HeartbeatService,
    HeartbeatScheduler,
    {
      provide: FleetClient,
      useFactory: (config: VmHostConfig, tokens: BearerTokens) =>
        new FleetClient(config.fleetEndpoint, tokens.headersFor('node')),
      inject: [VmHostConfig, BearerTokens],
    },
  ],
  exports: [HeartbeatScheduler],
})
export class HeartbeatModule {}
