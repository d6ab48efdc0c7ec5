import { Module } from '@nestjs/common';
import { BearerTokens } from '@app/daemon';
import { heartbeatRequestTimeoutMs } from '@app/fleet-domain';
import { VmHostConfig } from '../config/vm-host.config';
import { HostFactsModule } from '../host-facts/host-facts.module';
import { ReplicasModule } from '../replicas/replicas.module';
import { VmsModule } from '../vms/vms.module';
import { MeshModule } from '../mesh/mesh.module';
import { FleetClient } from './fleet.client';
import { HeartbeatScheduler } from './heartbeat.scheduler';
import { HeartbeatService } from './heartbeat.service';

@Module({
  imports: [VmsModule, ReplicasModule, HostFactsModule, MeshModule],
  providers: [
    HeartbeatService,
    HeartbeatScheduler,
    {
      provide: FleetClient,
      // Several controllers share the heartbeat's timeout, so a silent one leaves the others time.
      useFactory: (config: VmHostConfig, tokens: BearerTokens) =>
        new FleetClient(
          config.fleetEndpoints,
          tokens.headersFor('node'),
          Math.floor(
            heartbeatRequestTimeoutMs(config.heartbeatIntervalS * 1000) /
              config.fleetEndpoints.length,
          ),
        ),
      inject: [VmHostConfig, BearerTokens],
    },
  ],
  exports: [HeartbeatScheduler],
})
export class HeartbeatModule {}
