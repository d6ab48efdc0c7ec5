import { Module } from '@nestjs/common';
import { NodesModule } from '../nodes/nodes.module';
import { TenantQuotas } from './tenant-quotas.service';

/** Tenants' quotas and their use (the tokens are the guard's: see FleetCoreModule). */
@Module({
  imports: [NodesModule],
  providers: [TenantQuotas],
  exports: [TenantQuotas],
})
export class TenantsModule {}
