import { Module } from '@nestjs/common';
import { VmsModule } from '../vms/vms.module';
import { ReplicaGrantGuard } from './replica-grant.guard';
import { ReplicasController } from './replicas.controller';
import { ReplicasService } from './replicas.service';

/** Copies of other nodes' VMs this node keeps (the peer side of copies). */
@Module({
  imports: [VmsModule],
  controllers: [ReplicasController],
  providers: [ReplicasService, ReplicaGrantGuard],
  exports: [ReplicasService],
})
export class ReplicasModule {}
