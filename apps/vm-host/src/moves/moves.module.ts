import { Module } from '@nestjs/common';
import { HostFactsModule } from '../host-facts/host-facts.module';
import { VmsModule } from '../vms/vms.module';
import { MoveGrantGuard } from './move-grant.guard';
import { MovesInController } from './moves-in.controller';
import { MovesInService } from './moves-in.service';
import { MovesOutController } from './moves-out.controller';
import { MovesOutService } from './moves-out.service';
import { MovesResumeService } from './moves-resume.service';
import { PausedMoves } from './paused-moves.service';

/** VMs moving between nodes: leaving this one (controller's call), coming in (the old node's). */
@Module({
  imports: [VmsModule, HostFactsModule],
  controllers: [MovesInController, MovesOutController],
  providers: [MovesInService, MovesOutService, MovesResumeService, MoveGrantGuard, PausedMoves],
})
export class MovesModule {}
