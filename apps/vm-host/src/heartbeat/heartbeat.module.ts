import { Module } from '@nestjs/common';
import { VmsModule } from '../vms/vms.module';
import { HeartbeatScheduler } from './heartbeat.scheduler';
import { HeartbeatService } from './heartbeat.service';

@Module({
  imports: [VmsModule],
  providers: [HeartbeatService, HeartbeatScheduler],
  exports: [HeartbeatScheduler],
})
export class HeartbeatModule {}
