import { Module } from '@nestjs/common';
import { FleetConfig } from '../config/fleet.config';
import { NodeTokens } from '../nodes/node-tokens';
import { VmMoveController } from './vm-move.controller';
import { VmMoveService } from './vm-move.service';

/**
 * Moving VMs between nodes, on the operations listener. The store, the agents' client and the
 * clock come from the ops app's shared instances; the node tokens (for the move grants) are
 * derived from the same settings as the controller's own.
 */
@Module({
  controllers: [VmMoveController],
  providers: [
    VmMoveService,
    {
      provide: NodeTokens,
      inject: [FleetConfig],
      useFactory: (config: FleetConfig) => NodeTokens.fromConfig(config),
    },
  ],
  exports: [VmMoveService],
})
export class VmMoveModule {}
