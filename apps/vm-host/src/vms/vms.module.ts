import { Module } from '@nestjs/common';
import { HostFactsModule } from '../host-facts/host-facts.module';
import { VmStatesSource } from '../metrics/vm-states.source';
import { CrashFailpoint } from './crash-failpoint';
import { DeletedDisksJob } from './deleted-disks.job';
import { DeletedDisks } from './deleted-disks.service';
import { NodeVmsSource } from './node-vms.source';
import { VmAdmissionService } from './vm-admission.service';
import { VM_DRIVER_PROVIDER } from './vm-driver.provider';
import { VmFiles } from './vm-files';
import { VmLifecycle } from './vm-lifecycle';
import { VmReconciliationService } from './vm-reconciliation.service';
import { VmRestartService } from './vm-restart.service';
import { VmWatchJob } from './vm-watch.job';
import { VmActionsService } from './vm-actions.service';
import { VmActionsController } from './vm-actions.controller';
import { VmSidecars } from './vm-sidecars';
import { VmsController } from './vms.controller';
import { VmsService } from './vms.service';

@Module({
  imports: [HostFactsModule],
  controllers: [VmsController, VmActionsController],
  providers: [
    VmsService,
    VmAdmissionService,
    VmReconciliationService,
    VmRestartService,
    VmActionsService,
    VmLifecycle,
    VmSidecars,
    VmFiles,
    DeletedDisks,
    DeletedDisksJob,
    VmWatchJob,
    CrashFailpoint,
    VM_DRIVER_PROVIDER,
    { provide: NodeVmsSource, useExisting: VmsService },
    {
      // list(), not the heartbeat's report(): a scrape reads, it never reconciles.
      provide: VmStatesSource,
      useFactory: (vms: VmsService): VmStatesSource => ({
        states: async () => (await vms.list()).map((vm) => vm.state),
        crashLooping: () => vms.crashLooping(),
      }),
      inject: [VmsService],
    },
  ],
  exports: [NodeVmsSource, VmStatesSource, VmsService],
})
export class VmsModule {}
