import { Module } from '@nestjs/common';
import { NodesModule } from '../nodes/nodes.module';
import { TenantsModule } from '../tenants/tenants.module';
import { VmCreateSettings } from './vm-create.settings';
import { VmHostClient, VmHostClientSettings } from './vm-host.client';
import { VmPlacementService } from './vm-placement.service';
import { VmsController } from './vms.controller';
import { VmsService } from './vms.service';

@Module({
  imports: [NodesModule, TenantsModule],
  controllers: [VmsController],
  providers: [VmsService, VmPlacementService, VmHostClient, VmHostClientSettings, VmCreateSettings],
  // The operations listener calls agents and reads the listing through these instances.
  exports: [VmsService, VmHostClient, TenantsModule],
})
export class VmsModule {}
