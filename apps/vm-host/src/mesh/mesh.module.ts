import { Module } from '@nestjs/common';
import { VmsModule } from '../vms/vms.module';
import { RoutingMesh } from './routing-mesh';

/** The routing mesh (routing-mesh.ts), fed by the heartbeat's answers. */
@Module({
  imports: [VmsModule],
  providers: [RoutingMesh],
  exports: [RoutingMesh],
})
export class MeshModule {}
