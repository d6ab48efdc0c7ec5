import { Module } from '@nestjs/common';
import { FleetConfig } from '../config/fleet.config';
import { NodesModule } from '../nodes/nodes.module';
import { TenantsModule } from '../tenants/tenants.module';
import { VmCreateSettings } from './vm-create.settings';
import { VmHostClient } from './vm-host.client';
import { VmHostClientSettings } from './agent-calls';
import { VmPlacementService } from './vm-placement.service';
import { VmsController } from './vms.controller';
import { VmsService } from './vms.service';

@Module({
  imports: [NodesModule, TenantsModule],
  controllers: [VmsController],
  providers: [
    VmsService,
    VmPlacementService,
    VmHostClient,
    VmHostClientSettings,
    {
      provide: VmCreateSettings,
      useFactory: (config: FleetConfig): VmCreateSettings =>
        Object.assign(new VmCreateSettings(), {
          copies: { count: config.copies, every_s: config.copyEveryS },
        }),
      inject: [FleetConfig],
    },
  ],
  // The operations listener calls agents and reads the listing through these instances.
  exports: [VmsService, VmHostClient, TenantsModule],
})
export class VmsModule {}
