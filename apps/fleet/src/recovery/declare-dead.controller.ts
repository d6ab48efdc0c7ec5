import { Controller, HttpCode, Param, Post } from '@nestjs/common';
import { RequiresToken, invalidInput } from '@app/daemon';
import {
  ApiAcceptedResponse,
  ApiOperation,
  ApiTags,
  DeclaredDeadNode,
  EXAMPLE_NODE_ID,
  NodeIdParams,
} from '@app/fleet-domain';
import { ApiFleetStateErrors } from '../nodes/nodes.error-statuses';
import { WRONG_HOST } from '../operations/vm-operations.api-errors';
import { DeclareDeadService } from './declare-dead.service';
import { RECOVERY_ERROR_STATUSES } from './recovery.error-statuses';
import { DeclareDeadRefusedError } from './recovery.errors';

/** `ppn-fleet node declare-dead`, on the operations listener. */
@ApiTags('nodes')
@RequiresToken('api')
@Controller('v1/nodes')
export class DeclareDeadController {
  constructor(private readonly service: DeclareDeadService) {}

  @Post(':node_id/declare-dead')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'declareNodeDead',
    summary: 'Recover a lost node now, without waiting for VM_FLEET_RECOVER_AFTER_S',
    description:
      'etcd mode: marks the node for recovery, so the leader restores each of its protected VMs (copies count 1 or 2) from its freshest copy on another live node at its next pass, raising its generation, instead of VM_FLEET_RECOVER_AFTER_S after its last lease renewal. Refused (409) while its lease is live: a node that still renews it may still run its VMs. Nothing is asked of any agent here.',
  })
  @ApiAcceptedResponse({
    type: DeclaredDeadNode,
    description: 'Marked: the leader recovers its protected VMs.',
  })
  @ApiFleetStateErrors(
    RECOVERY_ERROR_STATUSES,
    WRONG_HOST,
    invalidInput(
      'node_id is not a fleet id.',
      'node_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
    ),
    {
      name: 'lease-live',
      when: 'The node still renews its lease (it heartbeats to a controller), or the fleet is not in etcd mode. Nothing was marked.',
      error: new DeclareDeadRefusedError(
        409,
        `node ${EXAMPLE_NODE_ID} still renews its lease (last renewed 2026-08-06T12:00:00.000Z, 40 s left): it heartbeats to a controller, so it may run its VMs; a node is declared dead only once its lease ran out (45 s, VM_FLEET_FENCE_AFTER_S, after its last heartbeat), when it has ended them itself`,
      ),
    },
    {
      name: 'unknown-node',
      when: 'No lease of the node is known in etcd.',
      error: new DeclareDeadRefusedError(
        404,
        `node ${EXAMPLE_NODE_ID}: no lease of it is known in etcd (it never heartbeat to a controller on etcd, or its recovery is done)`,
      ),
    },
  )
  declareDead(@Param() { node_id }: NodeIdParams): Promise<DeclaredDeadNode> {
    return this.service.declareDead(node_id);
  }
}
