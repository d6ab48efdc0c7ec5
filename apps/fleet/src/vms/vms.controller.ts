import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import {
  ApiBadGatewayResponse,
  ApiBadRequestResponse,
  ApiCreatedResponse,
  ApiHeader,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiResponse,
  ApiServiceUnavailableResponse,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import { RequiresToken } from '@app/daemon';
import type { Response } from 'express';
import {
  CreateVmRequest,
  ErrorBody,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_PATTERN,
  TenantQuery,
  VmIdParams,
  VmRecord,
} from '@app/fleet-domain';
import { IdempotencyKey } from './idempotency-key.decorator';
import { VmsService } from './vms.service';

@ApiTags('vms')
@RequiresToken('api')
@Controller('v1/vms')
export class VmsController {
  constructor(private readonly vms: VmsService) {}

  @Get()
  @ApiOperation({ operationId: 'listVms', summary: 'VMs on live nodes, optionally of one tenant' })
  @ApiOkResponse({ type: [VmRecord] })
  @ApiBadRequestResponse({ type: ErrorBody })
  listVms(@Query() { tenant_id }: TenantQuery): Promise<VmRecord[]> {
    return this.vms.listVms(tenant_id);
  }

  @Post()
  @ApiOperation({
    operationId: 'createVm',
    summary: "Place a VM on a node and have that node's agent start it",
  })
  @ApiHeader({
    name: IDEMPOTENCY_KEY_HEADER,
    required: false,
    schema: { type: 'string', pattern: IDEMPOTENCY_KEY_PATTERN.source, maxLength: 128 },
    description:
      'Makes the create safe to retry: the same key with the same body answers the VM the first create made (200), never a second one, for a day; the same key with another body is a 422.',
  })
  @ApiCreatedResponse({ type: VmRecord })
  @ApiOkResponse({
    type: VmRecord,
    description: 'A retry: this Idempotency-Key already made this VM.',
  })
  @ApiBadRequestResponse({ type: ErrorBody })
  @ApiUnprocessableEntityResponse({
    type: ErrorBody,
    description:
      'preferred_node unfit; Idempotency-Key already used with another body; or the node refused the VM (its reason, e.g. ram_mb beyond what it can hold)',
  })
  @ApiBadGatewayResponse({ type: ErrorBody, description: "the node's agent failed" })
  @ApiServiceUnavailableResponse({
    type: ErrorBody,
    description: 'no node has room: every live node considered, and why each was passed over',
  })
  @ApiResponse({
    status: 507,
    type: ErrorBody,
    description: "the node's disk folder has no room for the VM (the agent's reason)",
  })
  async createVm(
    @Body() request: CreateVmRequest,
    @IdempotencyKey() idempotencyKey: string | undefined,
    @Res({ passthrough: true }) response: Response,
  ): Promise<VmRecord> {
    const { vm, replayed } = await this.vms.createVm(request, idempotencyKey);
    if (replayed) response.status(200);
    return vm;
  }

  @Delete(':vm_id')
  @HttpCode(204)
  @ApiOperation({ operationId: 'deleteVm', summary: "Have the owning node's agent destroy a VM" })
  @ApiNoContentResponse({ description: 'Destroyed.' })
  @ApiBadRequestResponse({ type: ErrorBody })
  @ApiNotFoundResponse({ type: ErrorBody })
  @ApiBadGatewayResponse({ type: ErrorBody, description: 'agent unreachable; record kept' })
  deleteVm(@Param() { vm_id }: VmIdParams): Promise<void> {
    return this.vms.deleteVm(vm_id);
  }
}
