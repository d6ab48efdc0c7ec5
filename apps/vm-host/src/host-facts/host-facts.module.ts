import { Module } from '@nestjs/common';
import { HostFactsPaths, HostFactsService } from './host-facts.service';
import { ProcessTable } from './process-table';

@Module({
  providers: [HostFactsService, HostFactsPaths, ProcessTable],
  exports: [HostFactsService, ProcessTable],
})
export class HostFactsModule {}
