import { Module } from '@nestjs/common';
import { VmsModule } from '../vms/vms.module';
import { ReplicaGrantGuard } from './replica-grant.guard';
import { ReplicaReadController } from './replica-read.controller';
import { ReplicaReadGuard } from './replica-read.guard';
import { ReplicaReadService } from './replica-read.service';
import { ReplicasController } from './replicas.controller';
import { ReplicasService } from './replicas.service';
import { ReplicaSweep } from './replica-sweep';
import { ReplicaPrune } from './replica-prune';

/** Copies of other nodes' VMs this node keeps (the peer side of copies). */
@Module({
  imports: [VmsModule],
  controllers: [ReplicasController, ReplicaReadController],
  providers: [
    ReplicasService,
    ReplicaGrantGuard,
    ReplicaReadService,
    ReplicaReadGuard,
    ReplicaSweep,
    ReplicaPrune,
  ],
  exports: [ReplicasService, ReplicaPrune],
})
export class ReplicasModule {}
