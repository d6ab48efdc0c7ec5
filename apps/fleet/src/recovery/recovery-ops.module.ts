import { Module } from '@nestjs/common';
import { DeclareDeadController } from './declare-dead.controller';
import { DeclareDeadService } from './declare-dead.service';

/** Recovery's route on the operations listener (its instances come from the ops app's core). */
@Module({
  controllers: [DeclareDeadController],
  providers: [DeclareDeadService],
})
export class RecoveryOpsModule {}
