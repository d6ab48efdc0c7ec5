import { Module } from '@nestjs/common';
import { NodesModule } from '../nodes/nodes.module';
import { VmCreateSettings } from './vm-create.settings';
import { VmHostClient, VmHostClientSettings } from './vm-host.client';
import { VmsController } from './vms.controller';
import { VmsService } from './vms.service';

@Module({
  imports: [NodesModule],
  controllers: [VmsController],
  providers: [VmsService, VmHostClient, VmHostClientSettings, VmCreateSettings],
})
export class VmsModule {}
