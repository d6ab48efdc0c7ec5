import { Controller, Get, Param, Query, StreamableFile, UseGuards } from '@nestjs/common';
import { CopyReadGrant, OwnCredentials } from '@app/daemon';
import {
  ApiExcludeController,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ReplicaChainRead,
  ReplicaFileParams,
  ReplicaPointQuery,
  VmIdParams,
} from '@app/fleet-domain';
import { ApiReplicasErrors } from './replicas.error-statuses';
import { ReplicaReadGuard, VerifiedReadGrant } from './replica-read.guard';
import { ReplicaReadService } from './replica-read.service';

/**
 * A VM's copy held here, read by the node a restore makes it on (it does not hold the copy):
 * with a read grant the controller issued for that VM, this node and that reader only.
 */
// Agent to agent only, with a credential of its own, as the replica write routes.
@ApiExcludeController()
@ApiTags('replicas')
@OwnCredentials()
@UseGuards(ReplicaReadGuard)
@Controller('v1/replicas/:vm_id/read')
export class ReplicaReadController {
  constructor(private readonly reads: ReplicaReadService) {}

  @Get()
  @ApiOperation({
    operationId: 'readReplicaChain',
    summary: "The files of a VM's copy up to a point, with their sizes and sha256",
  })
  @ApiOkResponse({ type: ReplicaChainRead })
  @ApiReplicasErrors()
  chain(
    @Param() { vm_id }: VmIdParams,
    @Query() { point }: ReplicaPointQuery,
    @VerifiedReadGrant() grant: CopyReadGrant,
  ): Promise<ReplicaChainRead> {
    return this.reads.chain(vm_id, grant, point);
  }

  @Get('files/:chain_id/:file')
  @ApiOperation({
    operationId: 'readReplicaFile',
    summary: 'One file of the chain, whole (application/octet-stream), at VM_COPY_MAX_MBPS',
  })
  @ApiReplicasErrors()
  async file(@Param() { vm_id, chain_id, file }: ReplicaFileParams): Promise<StreamableFile> {
    const { sizeBytes, body } = await this.reads.file(vm_id, chain_id, file);
    return new StreamableFile(body, { type: 'application/octet-stream', length: sizeBytes });
  }
}
