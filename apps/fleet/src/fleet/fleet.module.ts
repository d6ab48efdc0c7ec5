import { Module } from '@nestjs/common';
import { NodesModule } from '../nodes/nodes.module';
import { FleetController } from './fleet.controller';

/** GET /v1/fleet: the whole-fleet view, read through the nodes feature. */
@Module({
  imports: [NodesModule],
  controllers: [FleetController],
})
export class FleetModule {}
