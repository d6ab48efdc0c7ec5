import {
  Body,
  Controller,
  Get,
  HttpCode,
  Param,
  Post,
  Req,
  UnauthorizedException,
} from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@app/fleet-domain';
import type { Request } from 'express';
import { BODY_ERRORS, RequiresToken, invalidInput, presentedBearerToken } from '@app/daemon';
import {
  EXAMPLE_NODE_ID,
  HeartbeatAnswer,
  NodeHeartbeat,
  NodeIdParams,
  NodeRecord,
} from '@app/fleet-domain';
import { ApiFleetStateErrors, NODES_ERROR_STATUSES } from './nodes.error-statuses';
import { LoopbackWgIpError, NodeNotFoundError, NotThisNodesTokenError } from './nodes.errors';
import { NodesService } from './nodes.service';
import { peerAddressOf } from './peer-address';

@ApiTags('nodes')
@Controller('v1/nodes')
export class NodesController {
  constructor(private readonly nodes: NodesService) {}

  @Post('heartbeat')
  @HttpCode(200)
  @RequiresToken('node', {
    name: 'not-this-node',
    when: "Only when VM_FLEET_NODE_SECRET is set on the controller: the token is not the one of the body's node_id (another node's, the secret itself, any other). Judged once the body is parsed and valid, before anything is stored.",
    error: new UnauthorizedException(new NotThisNodesTokenError(EXAMPLE_NODE_ID).message),
  })
  @ApiOperation({
    operationId: 'postHeartbeat',
    summary: "Report a node's state; the first heartbeat enrolls it, each one replaces its record",
    description:
      "What every agent sends at start and then every VM_HEARTBEAT_INTERVAL_S seconds. There is no registration call: the first heartbeat of a node id enrolls it. Each heartbeat replaces the node's record and VM list wholesale; a node id already in use is not refused, the newer heartbeat takes it over. A heartbeat stamped before the one stored for the same boot and arriving less than 5 s after it is a late copy: ignored, still 200, and the answer says so (accepted false). One arriving later is taken whatever its stamp: its agent's clock went back. Unknown extra fields are ignored.",
  })
  @ApiOkResponse({
    type: HeartbeatAnswer,
    description: 'Taken (accepted true), or ignored as a late copy (accepted false).',
  })
  @ApiFleetStateErrors(
    NODES_ERROR_STATUSES,
    ...BODY_ERRORS,
    invalidInput(
      'A field is missing or out of its range; the message names each one.',
      'vms.0.started_at must be an RFC 3339 date-time such as 2026-08-06T12:00:00.123456789Z, or null',
    ),
    {
      name: 'loopback-wg-ip',
      when: "wg_ip is a loopback address (127.0.0.0/8, ::1) but the heartbeat did not come over loopback: only an agent on the controller's own machine may name one. Judged after the token; nothing is stored.",
      error: new LoopbackWgIpError('127.0.0.1', '192.0.2.7'),
    },
  )
  heartbeat(
    @Body() heartbeat: NodeHeartbeat,
    // The request itself, not @BearerCredential() and @Ip(): each custom parameter goes through
    // the validation pipe (promises per heartbeat), and @Ip() parses X-Forwarded-For.
    @Req() request: Request,
  ): Promise<HeartbeatAnswer> {
    const token = presentedBearerToken(request.headers.authorization);
    return this.nodes.acceptHeartbeat(heartbeat, token, peerAddressOf(request));
  }

  @Get()
  @RequiresToken('api')
  @ApiOperation({
    operationId: 'listNodes',
    summary: 'Every node heard from in the last 30 s',
    description:
      'The live nodes, sorted by node_id. A node silent for more than 30 s is not shown at all (there is no status field): absent means never enrolled or silent.',
  })
  @ApiOkResponse({ type: [NodeRecord], description: 'The live nodes; [] when there are none.' })
  @ApiFleetStateErrors(NODES_ERROR_STATUSES)
  listNodes(): Promise<NodeRecord[]> {
    return this.nodes.listNodes();
  }

  @Get(':node_id')
  @RequiresToken('api')
  @ApiOperation({
    operationId: 'getNode',
    summary: 'One node, if heard from in the last 30 s',
    description:
      "The node's record, as GET /v1/nodes lists it. 404 both for a node never enrolled and for one silent for more than 30 s: the API does not tell them apart.",
  })
  @ApiOkResponse({ type: NodeRecord, description: 'The live node.' })
  @ApiFleetStateErrors(
    NODES_ERROR_STATUSES,
    invalidInput(
      'node_id is not a fleet id.',
      'node_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
    ),
    {
      name: 'node-not-found',
      when: 'No node with this id was heard from in the last 30 s.',
      error: new NodeNotFoundError(EXAMPLE_NODE_ID),
    },
  )
  getNode(@Param() { node_id }: NodeIdParams): Promise<NodeRecord> {
    return this.nodes.getNode(node_id);
  }
}
