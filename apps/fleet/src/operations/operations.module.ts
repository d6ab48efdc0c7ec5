import { Module } from '@nestjs/common';
import { NodeDisksController } from './node-disks.controller';
import { NodeDisksService } from './node-disks.service';
import { VmCopiesController } from './vm-copies.controller';
import { VmCopiesService } from './vm-copies.service';
import { VmOperationsController } from './vm-operations.controller';
import { VmOperationsService } from './vm-operations.service';
import { VmRestoreService } from './vm-restore.service';
import { RestorePulls } from './restore-pull';

/**
 * The operations listener's feature: its controller and service. What they need (the VMs'
 * listing, the agents' client, the tokens) comes from the controller's own instances, which
 * the ops app's root module provides globally.
 */
@Module({
  controllers: [VmOperationsController, NodeDisksController, VmCopiesController],
  providers: [
    VmOperationsService,
    NodeDisksService,
    VmCopiesService,
    VmRestoreService,
    RestorePulls,
  ],
  exports: [VmOperationsService, VmCopiesService, VmRestoreService],
})
export class OperationsModule {}
