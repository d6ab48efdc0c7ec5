import { Body, Controller, Delete, Get, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { CopyGrant, OwnCredentials } from '@app/daemon';
import {
  ApiExcludeController,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  IncomingMove,
  IncomingMoveRequest,
  VmIdParams,
  VmRecord,
} from '@app/fleet-domain';
import { ApiIncomingMoveErrors } from './moves.error-statuses';
import { MoveGrantGuard, VerifiedMoveGrant } from './move-grant.guard';
import { MovesInService } from './moves-in.service';

/**
 * A VM moving to this node, driven by the node it leaves with the controller's move grant for
 * that VM and this node (not the node token).
 */
// Agent to agent only, with a credential of its own: no part of the agent's document, as
// @OwnCredentials() routes never are (docs/vms.md "Moving VMs and draining nodes" describes them).
@ApiExcludeController()
@ApiTags('moves')
@OwnCredentials()
@UseGuards(MoveGrantGuard)
@Controller('v1/moves/:vm_id/incoming')
export class MovesInController {
  constructor(private readonly moves: MovesInService) {}

  @Post()
  @HttpCode(201)
  @ApiOperation({
    operationId: 'receiveMove',
    summary: 'Makes room for the VM and answers where its disk (and live, its migration) go',
  })
  @ApiOkResponse({ type: IncomingMove })
  @ApiIncomingMoveErrors()
  receive(
    @Param() { vm_id }: VmIdParams,
    @VerifiedMoveGrant() grant: CopyGrant,
    @Body() request: IncomingMoveRequest,
  ): Promise<IncomingMove> {
    return this.moves.receive(vm_id, grant, request);
  }

  @Get()
  @ApiOperation({
    operationId: 'awaitMove',
    summary: 'Whether this node still awaits the VM (its agent holds the move): 404 otherwise',
  })
  @ApiIncomingMoveErrors()
  awaited(@Param() { vm_id }: VmIdParams): { vm_id: string } {
    this.moves.awaiting(vm_id);
    return { vm_id };
  }

  @Post('done')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'finishMove',
    summary: 'The disk is sent (live: the migration completed): the VM is adopted here',
  })
  @ApiOkResponse({ type: VmRecord })
  @ApiIncomingMoveErrors()
  done(@Param() { vm_id }: VmIdParams): Promise<VmRecord> {
    return this.moves.done(vm_id);
  }

  @Delete()
  @HttpCode(200)
  @ApiOperation({ operationId: 'abortMove', summary: 'The move is given up: rolled back here' })
  @ApiIncomingMoveErrors()
  async abort(@Param() { vm_id }: VmIdParams): Promise<{ vm_id: string }> {
    await this.moves.abort(vm_id);
    return { vm_id };
  }
}
