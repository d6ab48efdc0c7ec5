import { Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  EXAMPLE_VM_ID,
  VmBackups,
  VmIdParams,
} from '@app/fleet-domain';
import { ErrorCase, RequiresToken, invalidInput } from '@app/daemon';
import { ApiVmsErrors } from '../vms.error-statuses';
import { VmNotOnNodeError } from '../vms.errors';
import { VmBackupRefusedError } from './vm-backups.errors';
import { VmBackupsService } from './vm-backups.service';

const BAD_VM_ID = invalidInput(
  'vm_id is not a fleet id.',
  'vm_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
);

const NOT_HERE: ErrorCase = {
  name: 'vm-not-found',
  when: 'This node has no VM with this id.',
  error: new VmNotOnNodeError(EXAMPLE_VM_ID),
};

/**
 * A VM's backups to this node's VM_BACKUP_DIR, called by the fleet controller's operations
 * listener with this node's token: take one now, list them.
 */
@ApiTags('vm-backups')
@RequiresToken('node')
@Controller('v1/vms/:vm_id/backups')
export class VmBackupsController {
  constructor(private readonly backups: VmBackupsService) {}

  @Get()
  @ApiOperation({
    operationId: 'listVmBackups',
    summary: "A VM's backups in this node's VM_BACKUP_DIR, newest first",
    description:
      'Each backup is a point in time: a file of a qcow2 chain (the first file full, each next one incremental, backed by the one before) with a manifest.json beside it. in_progress_since: a backup under way; last_error: why the last one failed. [] when VM_BACKUP_DIR is unset.',
  })
  @ApiOkResponse({ type: VmBackups })
  @ApiVmsErrors(BAD_VM_ID, NOT_HERE)
  list(@Param() { vm_id }: VmIdParams): Promise<VmBackups> {
    return this.backups.list(vm_id);
  }

  @Post()
  @HttpCode(202)
  @ApiOperation({
    operationId: 'backUpVm',
    summary: 'Back a VM up to VM_BACKUP_DIR now',
    description:
      "Answers at once (in_progress_since set); the backup runs after any other under way on this node. A running VM is copied by QEMU while it runs: a full copy when its chain has no usable bitmap (the first backup, a new UTC day, after a crash or a power cut, after a copy cut short), else the clusters written since the chain's last backup. A stopped VM is copied from its file, full. The new file joins its chain only once the copy completed and `qemu-img check` passed.",
  })
  @ApiAcceptedResponse({ type: VmBackups, description: "The VM's backups as of now." })
  @ApiVmsErrors(BAD_VM_ID, NOT_HERE, {
    name: 'backup-refused',
    when: 'The message is one of: "backups are off on this node (VM_BACKUP_DIR is not set)", "vm <id> is already being backed up". Nothing was started. (A VM neither Running nor Stopped, or running in a QEMU started before copies, is refused once its turn comes: see last_error.)',
    error: VmBackupRefusedError.off(),
  })
  backUp(@Param() { vm_id }: VmIdParams): Promise<VmBackups> {
    return this.backups.request(vm_id);
  }
}
