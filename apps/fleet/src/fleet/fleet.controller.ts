import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@app/fleet-domain';
import { RequiresToken } from '@app/daemon';
import { FleetStatus } from '@app/fleet-domain';
import { ApiFleetStateErrors } from '../nodes/nodes.error-statuses';
import { NodesService } from '../nodes/nodes.service';

/** GET /v1/fleet: the whole-fleet view, and the answer to "is the controller up?". */
@ApiTags('nodes')
@RequiresToken('api')
@Controller('v1/fleet')
export class FleetController {
  constructor(private readonly nodes: NodesService) {}

  @Get()
  @ApiOperation({
    operationId: 'getFleet',
    summary: 'Every live node and when this view was taken',
    description:
      'The live nodes (as GET /v1/nodes lists them) and the time of this view. Also the way to ask whether the controller is up: there is no /healthz.',
  })
  @ApiOkResponse({ type: FleetStatus, description: 'The fleet as of last_updated.' })
  // The view throws nothing of its own: only the store's 503.
  @ApiFleetStateErrors([])
  fleetStatus(): Promise<FleetStatus> {
    return this.nodes.fleetStatus();
  }
}
