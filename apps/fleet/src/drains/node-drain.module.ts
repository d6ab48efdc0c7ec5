import { Module } from '@nestjs/common';
import { VmMoveModule } from '../moves/vm-move.module';
import { NodeDrainController } from './node-drain.controller';
import { NodeDrainService } from './node-drain.service';

/** Draining nodes for maintenance, on the operations listener, by the move path. */
@Module({
  imports: [VmMoveModule],
  controllers: [NodeDrainController],
  providers: [NodeDrainService],
  exports: [NodeDrainService],
})
export class NodeDrainModule {}
