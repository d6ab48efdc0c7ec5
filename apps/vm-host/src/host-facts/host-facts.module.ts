import { Module } from '@nestjs/common';
import { VmHostConfig } from '../config/vm-host.config';
import { HostFactsPaths, HostFactsService } from './host-facts.service';
import { ProcessTable } from './process-table';

@Module({
  providers: [
    HostFactsService,
    {
      provide: HostFactsPaths,
      inject: [VmHostConfig],
      useFactory: (config: VmHostConfig) => HostFactsPaths.forConfig(config),
    },
    ProcessTable,
  ],
  exports: [HostFactsService, ProcessTable],
})
export class HostFactsModule {}
