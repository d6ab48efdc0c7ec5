import {
  Body,
  Controller,
  Get,
  HttpCode,
  Param,
  Post,
  Put,
  Query,
  Req,
  UseGuards,
} from '@nestjs/common';
import type { Request } from 'express';
import { CopyGrant, OwnCredentials } from '@app/daemon';
import {
  ApiCreatedResponse,
  ApiExcludeController,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ReplicaChunkQuery,
  ReplicaState,
  ReplicaTransfer,
  ReplicaTransferParams,
  StartReplicaTransfer,
  VmIdParams,
} from '@app/fleet-domain';
import { ApiReplicasErrors } from './replicas.error-statuses';
import { ReplicaGrantGuard, VerifiedGrant } from './replica-grant.guard';
import { ReplicasService } from './replicas.service';

/** The chunk route, whose body is bytes (application/octet-stream), not JSON. */
export const REPLICA_CHUNK_PATH = /^\/v1\/replicas\/[^/]+\/transfers\/[^/]+$/;

/**
 * Copies of other nodes' VMs kept on this node, written and read by the VM's own node only,
 * with a copy grant the controller issued for that VM and this node (not the node token).
 */
// Agent to agent only, with a credential of its own: no part of the agent's document, as
// @OwnCredentials() routes never are (docs/vms.md "Copies on other nodes" describes them).
@ApiExcludeController()
@ApiTags('replicas')
@OwnCredentials()
@UseGuards(ReplicaGrantGuard)
@Controller('v1/replicas/:vm_id')
export class ReplicasController {
  constructor(private readonly replicas: ReplicasService) {}

  @Get()
  @ApiOperation({
    operationId: 'getReplica',
    summary: "What this node holds of a VM's copy (its chain, its last file)",
  })
  @ApiOkResponse({ type: ReplicaState })
  @ApiReplicasErrors()
  state(@Param() { vm_id }: VmIdParams): Promise<ReplicaState> {
    return this.replicas.state(vm_id);
  }

  @Post('transfers')
  @ApiOperation({
    operationId: 'startReplicaTransfer',
    summary: "Starts receiving one file of a VM's copy (full: a new chain; incremental: the next)",
  })
  @ApiCreatedResponse({ type: ReplicaTransfer })
  @ApiReplicasErrors()
  start(
    @Param() { vm_id }: VmIdParams,
    @VerifiedGrant() grant: CopyGrant,
    @Body() request: StartReplicaTransfer,
  ): Promise<ReplicaTransfer> {
    return this.replicas.start(vm_id, grant, request);
  }

  @Put('transfers/:transfer_id')
  @ApiOperation({
    operationId: 'putReplicaChunk',
    summary: 'One chunk of the file (application/octet-stream, Content-Length required)',
  })
  @ApiOkResponse({ type: ReplicaTransfer })
  @ApiReplicasErrors()
  chunk(
    @Param() { vm_id, transfer_id }: ReplicaTransferParams,
    @Query() { offset }: ReplicaChunkQuery,
    @VerifiedGrant() grant: CopyGrant,
    @Req() request: Request,
  ): Promise<ReplicaTransfer> {
    const length = request.headers['content-length'];
    const bytes = length !== undefined && /^\d{1,15}$/.test(length) ? Number(length) : undefined;
    return this.replicas.chunk(vm_id, grant, transfer_id, offset, bytes, request);
  }

  @Post('transfers/:transfer_id/done')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'finishReplicaTransfer',
    summary: 'The file is complete: checked with qemu-img, then taken into the chain',
  })
  @ApiOkResponse({ type: ReplicaState })
  @ApiReplicasErrors()
  finish(
    @Param() { vm_id, transfer_id }: ReplicaTransferParams,
    @VerifiedGrant() grant: CopyGrant,
  ): Promise<ReplicaState> {
    return this.replicas.finish(vm_id, grant, transfer_id);
  }
}
