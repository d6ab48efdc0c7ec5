import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  ApiBadGatewayResponse,
  ApiBadRequestResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import { RequiresToken } from '@app/daemon';
import { CreateVmRequest, ErrorBody, TenantQuery, VmIdParams, VmRecord } from '@app/fleet-domain';
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
  @ApiCreatedResponse({ type: VmRecord })
  @ApiBadRequestResponse({ type: ErrorBody })
  @ApiUnprocessableEntityResponse({ type: ErrorBody, description: 'preferred_node unfit' })
  @ApiBadGatewayResponse({ type: ErrorBody, description: "the node's agent failed" })
  @ApiServiceUnavailableResponse({ type: ErrorBody, description: 'no node has room' })
  createVm(@Body() request: CreateVmRequest): Promise<VmRecord> {
    return this.vms.createVm(request);
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
