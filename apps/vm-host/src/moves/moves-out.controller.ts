import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import {
  AgentMoveOutRequest,
  AgentMovedOut,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  EXAMPLE_VM_ID,
  VmIdParams,
} from '@app/fleet-domain';
import { ApiErrors, BODY_ERRORS, RequiresToken, invalidInput } from '@app/daemon';
import { VmNotOnNodeError } from '../vms/vms.errors';
import { VMS_ERROR_STATUSES } from '../vms/vms.error-statuses';
import { MOVES_ERROR_STATUSES } from './moves.error-statuses';
import { MoveConflictError, MoveFailedError, MoveRefusedError } from './moves.errors';
import { MovesOutService } from './moves-out.service';
import { MovesResumeService } from './moves-resume.service';

const BAD_ID = invalidInput(
  'vm_id is not a fleet id.',
  'vm_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
);
const NOT_HERE = {
  name: 'vm-not-found',
  when: 'This node has no VM with this id.',
  error: new VmNotOnNodeError(EXAMPLE_VM_ID),
};

/** A VM leaving this node, for the controller's operations listener (node token). */
@ApiTags('moves')
@RequiresToken('node')
@Controller('v1/vms/:vm_id')
export class MovesOutController {
  constructor(
    private readonly moves: MovesOutService,
    private readonly resumes: MovesResumeService,
  ) {}

  @Post('move-out')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'moveVmOut',
    summary: 'Moves the VM to another node (live when it runs, cold when stopped)',
    description:
      'Live: its disk mirrored over NBD (write-blocking) to the other node, whose QEMU, on the same machine type and CPU model, awaits its migration; the migration paused before its switchover, the mirror ended, then the switchover; the other node runs the guest and answers, and it is stopped here (desired_state stopped) with its disk kept until move-release. Cold: its disk sent over NBD, the other node starting it when it should run. A failure before the other node runs it leaves it running here. Answers once it is there, with what the move took.',
  })
  @ApiOkResponse({ type: AgentMovedOut })
  @ApiErrors(
    [...VMS_ERROR_STATUSES, ...MOVES_ERROR_STATUSES],
    BAD_ID,
    ...BODY_ERRORS,
    NOT_HERE,
    {
      name: 'busy',
      when: 'The VM is being started, stopped or deleted, in error, or neither running nor stopped.',
      error: new MoveConflictError(`vm ${EXAMPLE_VM_ID} is busy (stop): move it once that ends`),
    },
    {
      name: 'refused',
      when: 'The other node refused it: another machine type, CPU model or accelerator, no room.',
      error: new MoveRefusedError(
        "node node-b answered POST /v1/moves/web-1/incoming with 422: machine: this node's QEMU has no machine type pc-q35-9.1",
      ),
    },
    {
      name: 'failed',
      when: 'The move failed midway; the VM runs here still (or stays here, stopped).',
      error: new MoveFailedError(
        `vm ${EXAMPLE_VM_ID}: its move to node node-b failed, it runs here still: the migration failed`,
      ),
    },
  )
  moveOut(
    @Param() { vm_id }: VmIdParams,
    @Body() request: AgentMoveOutRequest,
  ): Promise<AgentMovedOut> {
    return this.moves.moveOut(vm_id, request.to);
  }

  @Post('move-release')
  @HttpCode(204)
  @ApiOperation({
    operationId: 'releaseMovedVm',
    summary: 'Removes a VM moved to another node: its disk and files here',
    description:
      'Sent by the controller once the new node reported the VM. Refused (409) while the VM should run here or its QEMU lives; 204 also when it is gone already.',
  })
  @ApiNoContentResponse({ description: 'Removed, or not here.' })
  @ApiErrors([...VMS_ERROR_STATUSES, ...MOVES_ERROR_STATUSES], BAD_ID, {
    name: 'not-moved',
    when: 'The VM should run here, or its QEMU lives: kept.',
    error: new MoveConflictError(`vm ${EXAMPLE_VM_ID} is not moved out of this node: kept`),
  })
  async release(@Param() { vm_id }: VmIdParams): Promise<void> {
    await this.moves.release(vm_id);
  }

  @Post('move-resume')
  @HttpCode(204)
  @ApiOperation({
    operationId: 'resumeMovedVm',
    summary: 'Runs again a guest a move left paused here, its new node having rolled it back',
    description:
      "Sent by the controller once the new node answered that it rolled the move back (nothing of the guest there): a guest this node left paused after its migration completed, the new node's take-over unconfirmed, runs again. Does nothing (204) when no guest is left paused by a move.",
  })
  @ApiNoContentResponse({ description: 'Resumed, or nothing to resume.' })
  @ApiErrors([...VMS_ERROR_STATUSES, ...MOVES_ERROR_STATUSES], BAD_ID, NOT_HERE, {
    name: 'moved',
    when: 'The VM was moved out of this node (it should not run here).',
    error: new MoveConflictError(`vm ${EXAMPLE_VM_ID} is moved out of this node: not resumed`),
  })
  async resume(@Param() { vm_id }: VmIdParams): Promise<void> {
    await this.resumes.resume(vm_id);
  }
}
