import { Module } from '@nestjs/common';
import { NodeVmsSource } from '../heartbeat/node-vms.source';
import { HostFactsModule } from '../host-facts/host-facts.module';
import { CrashFailpoint } from './crash-failpoint';
import { QemuDriver } from './qemu.driver';
import { VmDriver } from './vm-driver';
import { VmFiles } from './vm-files';
import { VmsController } from './vms.controller';
import { VmsService } from './vms.service';

@Module({
  imports: [HostFactsModule],
  controllers: [VmsController],
  providers: [
    VmsService,
    VmFiles,
    CrashFailpoint,
    { provide: VmDriver, useClass: QemuDriver },
    { provide: NodeVmsSource, useExisting: VmsService },
  ],
  exports: [NodeVmsSource, VmsService],
})
export class VmsModule {}
