import { Module } from '@nestjs/common';
import { MonotonicClock } from '@app/daemon';
import { HostFactsModule } from '../host-facts/host-facts.module';
import { VmStatesSource } from '../metrics/vm-states.source';
import { CrashFailpoint } from './failpoints/crash-failpoint';
import { DeletedDisksJob } from './files/deleted-disks.job';
import { DeletedDisks } from './files/deleted-disks.service';
import { NodeVmsSource } from './node-vms.source';
import { VmAdmissionService } from './admission/vm-admission.service';
import { VM_DRIVER_PROVIDER } from './vm-driver.provider';
import { VmDriver } from './vm-driver';
import { VmFiles } from './files/vm-files';
import { VmLifeCycles } from './life-cycle/vm-life-cycles';
import { VmReconciliationService } from './reconciliation/vm-reconciliation.service';
import { VmRestartService } from './reconciliation/vm-restart.service';
import { VmWatchJob } from './reconciliation/vm-watch.job';
import { DiskFullPauses } from './reconciliation/disk-full-pauses';
import { VmDiskRoom } from './admission/vm-disk-room';
import { VmActionsService } from './actions/vm-actions.service';
import { VmActionsController } from './actions/vm-actions.controller';
import { VmSidecars } from './files/vm-sidecars';
import { GuestIsolation } from './network/guest-isolation';
import { HostPorts } from './ports/host-ports';
import { MeshPorts } from './ports/mesh-ports';
import { VmsController } from './vms.controller';
import { VmsService } from './vms.service';
import { QemuCopier } from './copies/qemu-copier';
import { VmBackupsController } from './copies/vm-backups.controller';
import { VmBackupsJob } from './copies/vm-backups.job';
import { VmBackupsService } from './copies/vm-backups.service';
import { VmCopier } from './copies/vm-copier';
import { SerialTerminals } from './terminal/serial-terminals';
import { VmRestoresController } from './copies/vm-restores.controller';
import { VmRestoresService } from './copies/vm-restores.service';
import { CopyLocks } from './copies/copy-locks';
import { VmCopyPlanController } from './copies/vm-copy-plan.controller';
import { VmReplicationJob } from './copies/vm-replication.job';
import { VmReplicationService } from './copies/vm-replication.service';
import { VM_TRANSITION_HOOKS } from './life-cycle/vm-transitions';
import { FencedVms } from './fencing/fenced-vms.hook';
import { LEASE_CLOCK, VmFencing } from './fencing/vm-fencing.service';
import { VmFencingJob } from './fencing/vm-fencing.job';
import { CopyThrottle } from './copies/copy-throttle';
import { CopyShutdown } from './copies/copy-shutdown';
import { ReplicaPuller } from './copies/replica-pull';
import { ReplicaGrantFloors } from './copies/replica-grant-floors';

@Module({
  imports: [HostFactsModule],
  controllers: [
    VmsController,
    VmActionsController,
    VmBackupsController,
    VmRestoresController,
    VmCopyPlanController,
  ],
  providers: [
    VmsService,
    VmAdmissionService,
    VmReconciliationService,
    VmRestartService,
    VmActionsService,
    SerialTerminals,
    VmLifeCycles,
    VmSidecars,
    VmFiles,
    DeletedDisks,
    DeletedDisksJob,
    VmWatchJob,
    VmDiskRoom,
    DiskFullPauses,
    CrashFailpoint,
    HostPorts,
    MeshPorts,
    GuestIsolation,
    VM_DRIVER_PROVIDER,
    VmBackupsService,
    VmBackupsJob,
    VmRestoresService,
    CopyLocks,
    CopyThrottle,
    CopyShutdown,
    ReplicaPuller,
    ReplicaGrantFloors,
    VmReplicationService,
    VmReplicationJob,
    FencedVms,
    VmFencing,
    VmFencingJob,
    { provide: LEASE_CLOCK, useFactory: () => new MonotonicClock() },
    // The concerns that join the life cycle's moves, after its own (fencing's phase).
    {
      provide: VM_TRANSITION_HOOKS,
      useFactory: (fenced: FencedVms) => [fenced],
      inject: [FencedVms],
    },
    // QEMU's copies, as QEMU is the only driver (vm-driver.provider.ts).
    { provide: VmCopier, useClass: QemuCopier },
    { provide: NodeVmsSource, useExisting: VmsService },
    {
      // list(), not the heartbeat's report(): a scrape reads, it never reconciles.
      provide: VmStatesSource,
      useFactory: (vms: VmsService): VmStatesSource => ({
        states: async () => (await vms.list()).map((vm) => vm.state),
        crashLooping: () => vms.crashLooping(),
        pausedOnFullDisk: () => vms.pausedOnFullDisk(),
      }),
      inject: [VmsService],
    },
  ],
  exports: [
    NodeVmsSource,
    VmStatesSource,
    VmsService,
    VmCopier,
    CopyLocks,
    CopyThrottle,
    CopyShutdown,
    VmFiles,
    VmSidecars,
    VmLifeCycles,
    VmDiskRoom,
    VmAdmissionService,
    VmDriver,
    VmFencing,
    ReplicaGrantFloors,
    MeshPorts,
  ],
})
export class VmsModule {}
