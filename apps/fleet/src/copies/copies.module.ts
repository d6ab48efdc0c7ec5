import { Module } from '@nestjs/common';
import { NodesModule } from '../nodes/nodes.module';
import { VmsModule } from '../vms/vms.module';
import { CopyPlannerJob } from './copy-planner.job';
import { CopyPlannerService } from './copy-planner.service';

/** Where each VM's copies go: the plans the controller pushes to the agents. */
@Module({
  imports: [NodesModule, VmsModule],
  providers: [CopyPlannerService, CopyPlannerJob],
  exports: [CopyPlannerService],
})
export class CopiesModule {}
