import { Module } from '@nestjs/common';
import { InMemoryNodesRepository } from './in-memory-nodes.repository';
import { NodeStalenessJob } from './node-staleness.job';
import { NodesController } from './nodes.controller';
import { NodesRepository } from './nodes.repository';
import { NodesService } from './nodes.service';
import { RedisNodesRepository } from './redis-nodes.repository';
import { RedisConnection } from '../redis/redis-connection';

@Module({
  controllers: [NodesController],
  providers: [
    NodesService,
    NodeStalenessJob,
    {
      // The one place the store is chosen: Redis when VM_FLEET_REDIS_URL is set, else memory.
      provide: NodesRepository,
      useFactory: (redis: RedisConnection | null) =>
        redis ? new RedisNodesRepository(redis) : new InMemoryNodesRepository(),
      inject: [RedisConnection],
    },
  ],
  exports: [NodesService, NodesRepository],
})
export class NodesModule {}
