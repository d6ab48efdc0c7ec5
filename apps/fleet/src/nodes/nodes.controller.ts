import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiPayloadTooLargeResponse,
  ApiTags,
} from '@nestjs/swagger';
import { RequiresToken } from '@app/daemon';
import { ErrorBody, NodeHeartbeat, NodeIdParams, NodeRecord } from '@app/fleet-domain';
import { NodesService } from './nodes.service';

@ApiTags('nodes')
@Controller('v1/nodes')
export class NodesController {
  constructor(private readonly nodes: NodesService) {}

  @Post('heartbeat')
  @HttpCode(200)
  @RequiresToken('node')
  @ApiOperation({
    operationId: 'postHeartbeat',
    summary: "Report a node's state; the first heartbeat enrolls it, each one replaces its record",
  })
  @ApiOkResponse({ description: 'Accepted (also when ignored as out of order).' })
  @ApiBadRequestResponse({ type: ErrorBody })
  @ApiPayloadTooLargeResponse({ type: ErrorBody })
  async heartbeat(@Body() heartbeat: NodeHeartbeat): Promise<void> {
    await this.nodes.acceptHeartbeat(heartbeat);
  }

  @Get()
  @RequiresToken('api')
  @ApiOperation({ operationId: 'listNodes', summary: 'Every node heard from in the last 30 s' })
  @ApiOkResponse({ type: [NodeRecord] })
  listNodes(): Promise<NodeRecord[]> {
    return this.nodes.listNodes();
  }

  @Get(':node_id')
  @RequiresToken('api')
  @ApiOperation({ operationId: 'getNode', summary: 'One node, if heard from in the last 30 s' })
  @ApiOkResponse({ type: NodeRecord })
  @ApiBadRequestResponse({ type: ErrorBody })
  @ApiNotFoundResponse({ type: ErrorBody })
  getNode(@Param() { node_id }: NodeIdParams): Promise<NodeRecord> {
    return this.nodes.getNode(node_id);
  }
}
