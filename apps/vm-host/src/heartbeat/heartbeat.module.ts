import { Module } from '@nestjs/common';
import { VmsModule } from '../vms/vms.module';
import { HeartbeatScheduler } from './heartbeat.scheduler';
import { HeartbeatService } from './heartbeat.service';
import { HostFactsService } from './host-facts.service';

@Module({
  imports: [VmsModule],
  providers: [HeartbeatService, HeartbeatScheduler, HostFactsService],
  exports: [HeartbeatScheduler],
})
export class HeartbeatModule {}
