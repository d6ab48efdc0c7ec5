import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { BODY_ERRORS, RequiresToken, invalidInput } from '@app/daemon';
import {
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  EXAMPLE_NODE_ID,
  EXAMPLE_VM_ID,
  MoveVmRequest,
  MovedVm,
  VmIdParams,
} from '@app/fleet-domain';
import { ApiFleetStateErrors } from '../nodes/nodes.error-statuses';
import { OPERATIONS_ERROR_STATUSES } from '../operations/operations.error-statuses';
import { VMS_ERROR_STATUSES } from '../vms/vms.error-statuses';
import { PlacementRefusedError } from '../vms/vms.errors';
import { MOVES_ERROR_STATUSES } from './vm-move.error-statuses';
import { VmMoveFailedError, VmMoveRefusedError } from './vm-move.errors';
import { VmMoveService } from './vm-move.service';

/** Moving a VM to another node, on the operations listener. */
@ApiTags('vms')
@RequiresToken('api')
@Controller('v1/vms')
export class VmMoveController {
  constructor(private readonly moves: VmMoveService) {}

  @Post(':vm_id/move')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'moveVm',
    summary: 'Move a VM to another node: live when it runs, cold when stopped',
    description:
      "A Running VM moves live: its disk mirrored to the new node over NBD (every write reaching both until the end), its memory migrated, the guest paused only for the switchover (it does not reboot). A Stopped VM moves cold: its disk file sent; it stays stopped. Both nodes' QEMU must offer the VM's machine type, CPU model and accelerator (refused, naming what differs, otherwise). `to` absent: placement chooses among the live nodes but its own (refused with its reasons when none fits); the new node's RAM is held as for a create. The VM keeps its id, tenant, size, desired state, copies policy and published ports (the same host ports where free there, else new ones). Its old node keeps its disk until the new node reported the VM in a heartbeat, then removes it; a move that fails before the new node runs it leaves it running on its old node. Answers once it is there, with the pause, the time taken and the bytes sent.",
  })
  @ApiOkResponse({ type: MovedVm, description: 'The VM, on its new node.' })
  @ApiFleetStateErrors(
    [...MOVES_ERROR_STATUSES, ...OPERATIONS_ERROR_STATUSES, ...VMS_ERROR_STATUSES],
    ...BODY_ERRORS,
    invalidInput(
      'vm_id or to is not a fleet id.',
      'to must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
    ),
    {
      name: 'unknown-vm',
      when: 'No node lists the VM.',
      error: new VmMoveRefusedError(404, `vm ${EXAMPLE_VM_ID} is not on any node`),
    },
    {
      name: 'not-movable',
      when: 'The VM is neither Running nor Stopped, its node is silent, or another move of it is under way.',
      error: new VmMoveRefusedError(
        409,
        `vm ${EXAMPLE_VM_ID} is Provisioning on node ${EXAMPLE_NODE_ID}: a move takes a Running or Stopped VM`,
      ),
    },
    {
      name: 'refused',
      when: "`to` is not a live node, or is the VM's own; or a node refused: another machine type, CPU model or accelerator (named), no room.",
      error: new VmMoveRefusedError(
        422,
        `node ${EXAMPLE_NODE_ID} refused the move: node n2 answered POST /v1/moves/${EXAMPLE_VM_ID}/incoming with 422: accel: the VM runs under KVM on node ${EXAMPLE_NODE_ID} and this node cannot use KVM`,
      ),
    },
    {
      name: 'no-room',
      when: 'No node can take the VM (placement names each and why), or the named one cannot.',
      error: new PlacementRefusedError(
        'no-capacity',
        `vm ${EXAMPLE_VM_ID} cannot move: no node has 2560 MB available: n2 has 1024 MB`,
      ),
    },
    {
      name: 'failed',
      when: 'The move failed midway (the VM is left on its old node), or its new node did not report it within 60 s (the old node keeps its disk).',
      error: new VmMoveFailedError(
        `vm ${EXAMPLE_VM_ID}: the move failed; the VM is left on node ${EXAMPLE_NODE_ID} (its agent's log says why)`,
      ),
    },
  )
  move(@Param() { vm_id }: VmIdParams, @Body() request: MoveVmRequest): Promise<MovedVm> {
    return this.moves.move(vm_id, request);
  }
}
