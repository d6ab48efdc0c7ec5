import { Module } from '@nestjs/common';
import { NodesModule } from '../nodes/nodes.module';
import { RestorePulls } from '../operations/restore-pull';
import { VmRestoreService } from '../operations/vm-restore.service';
import { VmsModule } from '../vms/vms.module';
import { RecoveryJob } from './recovery.job';
import { RecoveryService } from './recovery.service';

/**
 * Recovery of lapsed nodes' protected VMs (etcd mode, the leader only), in the controller's main
 * app: it runs whether or not the operations listener is served, with its own instance of the
 * listener's restore path over the same store and agents' client.
 */
@Module({
  imports: [NodesModule, VmsModule],
  providers: [VmRestoreService, RestorePulls, RecoveryService, RecoveryJob],
})
export class RecoveryModule {}
