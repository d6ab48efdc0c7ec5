import { Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { RequiresToken, invalidInput } from '@app/daemon';
import {
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  EXAMPLE_NODE_ID,
  NodeDrain,
  NodeIdParams,
} from '@app/fleet-domain';
import { ApiFleetStateErrors } from '../nodes/nodes.error-statuses';
import { WRITE_REFUSALS, WRONG_HOST } from '../operations/vm-operations.api-errors';
import { DRAINS_ERROR_STATUSES } from './node-drain.error-statuses';
import { NodeDrainRefusedError } from './node-drain.errors';
import { NodeDrainService } from './node-drain.service';

const INVALID_NODE_ID = invalidInput(
  'node_id is not a fleet id.',
  'node_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
);
const UNKNOWN_NODE = {
  name: 'unknown-node',
  when: 'No node of that id is enrolled (nor drained).',
  error: new NodeDrainRefusedError(404, `node ${EXAMPLE_NODE_ID} is not enrolled`),
};

/** `ppn-fleet node drain`, `undrain` and `drain-status`, on the operations listener. */
@ApiTags('nodes')
@RequiresToken('api')
@Controller('v1/nodes')
export class NodeDrainController {
  constructor(private readonly drains: NodeDrainService) {}

  @Post(':node_id/drain')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'drainNode',
    summary: 'Drain a node for maintenance: placement passes it over, its VMs moved off it',
    description:
      "Marks the node drained (kept in the fleet's store, so every controller and a restarted one agree; its :9203 record is unchanged and it stays enrolled and listed): placement passes it over, saying why, for creates, moves, restores and recoveries. Then moves each VM its agent lists off it, two at a time, Running ones first: live when Running, cold when Stopped, placement choosing the node (as `vm move` without `to`). A VM that cannot move (no room on any other node, not Running or Stopped, a failed move) stays where it is, as it was, and its outcome says why. Answers once every VM was tried, with each one's outcome. Drained already: its VMs still listed are tried again (idempotent). `undrain` ends it.",
  })
  @ApiOkResponse({ type: NodeDrain, description: 'The node, drained, and what became of each VM.' })
  @ApiFleetStateErrors(
    DRAINS_ERROR_STATUSES,
    WRONG_HOST,
    ...WRITE_REFUSALS,
    INVALID_NODE_ID,
    UNKNOWN_NODE,
    {
      name: 'under-way',
      when: 'A drain of the node is under way on this controller.',
      error: new NodeDrainRefusedError(
        409,
        `node ${EXAMPLE_NODE_ID}: a drain of it is under way (ppn-fleet node drain-status ${EXAMPLE_NODE_ID} shows it)`,
      ),
    },
  )
  drain(@Param() { node_id }: NodeIdParams): Promise<NodeDrain> {
    return this.drains.drain(node_id);
  }

  @Post(':node_id/undrain')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'undrainNode',
    summary: 'End a drain: placement may choose the node again',
    description:
      'Clears the drained mark (idempotent: a node not drained answers the same). A drain under way takes no further VM; VMs moved off stay where they went.',
  })
  @ApiOkResponse({ type: NodeDrain, description: 'The node, no longer drained.' })
  @ApiFleetStateErrors(
    DRAINS_ERROR_STATUSES,
    WRONG_HOST,
    ...WRITE_REFUSALS,
    INVALID_NODE_ID,
    UNKNOWN_NODE,
  )
  undrain(@Param() { node_id }: NodeIdParams): Promise<NodeDrain> {
    return this.drains.undrain(node_id);
  }

  @Get(':node_id/drain')
  @ApiOperation({
    operationId: 'getNodeDrain',
    summary: "A node's drain: whether it is drained, since when, each VM's outcome so far",
    description:
      "What `node drain` did or is doing, from the fleet's store (so any controller answers it): whether the node is drained, since when, each VM's outcome in the order each ended (kept until `undrain`), and the VMs its agent still lists.",
  })
  @ApiOkResponse({ type: NodeDrain })
  @ApiFleetStateErrors(DRAINS_ERROR_STATUSES, WRONG_HOST, INVALID_NODE_ID, UNKNOWN_NODE)
  status(@Param() { node_id }: NodeIdParams): Promise<NodeDrain> {
    return this.drains.status(node_id);
  }
}
