import { Module } from '@nestjs/common';
import { HostFactsPaths, HostFactsService } from './host-facts.service';

@Module({
  providers: [HostFactsService, HostFactsPaths],
  exports: [HostFactsService],
})
export class HostFactsModule {}
