import { Module } from '@nestjs/common';
import { HostFactsService } from '../heartbeat/host-facts.service';
import { NodeVmsSource } from '../heartbeat/node-vms.source';
import { QemuDriver } from './qemu.driver';
import { VmFiles } from './vm-files';
import { VmsController } from './vms.controller';
import { VmsService } from './vms.service';

@Module({
  controllers: [VmsController],
  providers: [
    VmsService,
    QemuDriver,
    VmFiles,
    HostFactsService,
    { provide: NodeVmsSource, useExisting: VmsService },
  ],
  exports: [NodeVmsSource, HostFactsService, QemuDriver, VmFiles],
})
export class VmsModule {}
