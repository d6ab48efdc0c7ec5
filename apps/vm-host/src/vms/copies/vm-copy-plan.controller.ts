import { Body, Controller, Param, Put } from '@nestjs/common';
import {
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  CopyPlan,
  EXAMPLE_VM_ID,
  VmIdParams,
} from '@app/fleet-domain';
import { BODY_ERRORS, ErrorCase, RequiresToken, invalidInput } from '@app/daemon';
import { ApiVmsErrors } from '../vms.error-statuses';
import { VmNotOnNodeError } from '../vms.errors';
import { VmReplicationService } from './vm-replication.service';

const NOT_HERE: ErrorCase = {
  name: 'vm-not-found',
  when: 'This node has no VM with this id.',
  error: new VmNotOnNodeError(EXAMPLE_VM_ID),
};

/** The controller's copy plan for a VM: where its copies go, how often, with which grants. */
@ApiTags('vm-copies')
@RequiresToken('node')
@Controller('v1/vms/:vm_id/copy-plan')
export class VmCopyPlanController {
  constructor(private readonly replication: VmReplicationService) {}

  @Put()
  @ApiOperation({
    operationId: 'putVmCopyPlan',
    summary: "Sets where and how often the VM's copies go (the controller sends it)",
    description:
      "Kept beside the VM's files, so an agent restart keeps copying. Every every_s the running VM is copied to each peer with QEMU's incremental backup (the first copy full), staged under VM_DISK_DIR, sent at most VM_COPY_MAX_MBPS with the peer's grant; a stopped VM once. peers []: copies stop.",
  })
  @ApiOkResponse({ type: CopyPlan, description: 'The plan as kept.' })
  @ApiVmsErrors(
    invalidInput(
      'vm_id is not a fleet id.',
      'vm_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
    ),
    NOT_HERE,
    ...BODY_ERRORS,
  )
  put(@Param() { vm_id }: VmIdParams, @Body() plan: CopyPlan): Promise<CopyPlan> {
    return this.replication.setPlan(vm_id, plan);
  }
}
