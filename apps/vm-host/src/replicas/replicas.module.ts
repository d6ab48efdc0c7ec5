import { MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import type { Request } from 'express';
import { VmsModule } from '../vms/vms.module';
import { ReplicaGrantGuard } from './replica-grant.guard';
import { ReplicaReadController } from './replica-read.controller';
import { ReplicaReadGuard } from './replica-read.guard';
import { ReplicaReadService } from './replica-read.service';
import { ReplicasController } from './replicas.controller';
import { ReplicasService } from './replicas.service';
import { ReplicaSweep } from './replica-sweep';
import { ReplicaPrune } from './replica-prune';
import { ReplicaConnections } from './replica-connections';

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
    ReplicaConnections,
  ],
  exports: [ReplicasService, ReplicaPrune],
})
export class ReplicasModule implements NestModule {
  constructor(private readonly connections: ReplicaConnections) {}

  /** A stopping agent ends its peers' copies and pulls at once (ReplicaConnections). */
  configure(consumer: MiddlewareConsumer): void {
    consumer
      .apply((request: Request, _response: unknown, next: () => void) => {
        this.connections.track(request.socket);
        next();
      })
      .forRoutes(ReplicasController, ReplicaReadController);
  }
}
