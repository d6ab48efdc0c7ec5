import { Module } from '@nestjs/common';
import { FleetController } from './fleet.controller';
import { InMemoryNodesRepository } from './in-memory-nodes.repository';
import { NodeStalenessJob } from './node-staleness.job';
import { NodesController } from './nodes.controller';
import { NodesRepository } from './nodes.repository';
import { NodesService } from './nodes.service';

@Module({
  controllers: [NodesController, FleetController],
  providers: [
    NodesService,
    NodeStalenessJob,
    { provide: NodesRepository, useClass: InMemoryNodesRepository },
  ],
  exports: [NodesService, NodesRepository],
})
export class NodesModule {}
