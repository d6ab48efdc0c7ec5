import { Module } from '@nestjs/common';
import { NodeVmsSource } from '../heartbeat/node-vms.source';
import { VmsService } from './vms.service';

@Module({
  providers: [VmsService, { provide: NodeVmsSource, useExisting: VmsService }],
  exports: [NodeVmsSource],
})
export class VmsModule {}
