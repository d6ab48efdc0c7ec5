import { Controller, Get } from '@nestjs/common';
import { RequiresToken } from '@app/daemon';
import { ApiOkResponse, ApiOperation, ApiTags, NodeDiskRoom } from '@app/fleet-domain';
import { ApiFleetStateErrors } from '../nodes/nodes.error-statuses';
import { OPERATIONS_ERROR_STATUSES } from './operations.error-statuses';
import { NodeDisksService } from './node-disks.service';
import { WRONG_HOST } from './vm-operations.api-errors';

/** The nodes' disk room, which GET /v1/nodes does not show (its records keep eight fields). */
@ApiTags('nodes')
@RequiresToken('api')
@Controller('v1/node-disks')
export class NodeDisksController {
  constructor(private readonly disks: NodeDisksService) {}

  @Get()
  @ApiOperation({
    operationId: 'listNodeDisks',
    summary: "The live nodes' disk room for VM disks",
    description:
      "Each live node (as GET /v1/nodes lists them, by node_id) with VM_DISK_DIR's room as its last heartbeat reported it: what `ppn-fleet status` shows as DISK.",
  })
  @ApiOkResponse({ type: [NodeDiskRoom], description: 'The live nodes; [] when there are none.' })
  @ApiFleetStateErrors(OPERATIONS_ERROR_STATUSES, WRONG_HOST)
  list(): Promise<NodeDiskRoom[]> {
    return this.disks.list();
  }
}
