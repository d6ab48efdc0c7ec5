import { Controller, Get, Param } from '@nestjs/common';
import { RequiresToken, TenantScoped } from '@app/daemon';
import { ApiOkResponse, ApiOperation, ApiTags, VmCopies, VmIdParams } from '@app/fleet-domain';
import { ApiFleetStateErrors } from '../nodes/nodes.error-statuses';
import { VmCopiesService } from './vm-copies.service';
import { INVALID_VM_ID, STATUSES, VM_NOT_FOUND, WRONG_HOST } from './vm-operations.api-errors';

/** What protects a VM: its copies on other nodes and its backups (`ppn-fleet vm copies`). */
@ApiTags('vms')
@RequiresToken('api')
@Controller('v1/vms')
export class VmCopiesController {
  constructor(private readonly copies: VmCopiesService) {}

  @TenantScoped()
  @Get(':vm_id/copies')
  @ApiOperation({
    operationId: 'listVmCopies',
    summary: "The VM's copies on other nodes and its backups",
    description:
      "Its copy policy (as its agent reports it), every copy of it the live nodes other than its own say they hold (their heartbeats' replicas; freshest first), and its backups in its node's VM_BACKUP_DIR, asked of that node's agent. The agent silent, unreachable or failing: backups is null and backups_unread says why; the copies are shown all the same.",
  })
  @ApiOkResponse({ type: VmCopies })
  @ApiFleetStateErrors(STATUSES, WRONG_HOST, INVALID_VM_ID, VM_NOT_FOUND)
  list(@Param() { vm_id }: VmIdParams): Promise<VmCopies> {
    return this.copies.copiesOf(vm_id);
  }
}
