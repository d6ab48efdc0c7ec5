import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
} from '@app/fleet-domain';
import { CreateVmRequest, ErrorBody, VmIdParams, VmRecord } from '@app/fleet-domain';
import { VmsService } from './vms.service';

/** The agent's local API, called by the fleet controller. */
@ApiTags('vms')
@Controller('v1')
export class VmsController {
  constructor(private readonly vms: VmsService) {}

  @Post('spawn')
  @ApiOperation({
    operationId: 'spawnVm',
    summary: 'Accept a VM (state Provisioning) and start it under QEMU after answering',
  })
  @ApiCreatedResponse({ type: VmRecord })
  @ApiBadRequestResponse({ type: ErrorBody })
  @ApiServiceUnavailableResponse({ type: ErrorBody, description: 'the base image is missing' })
  spawn(@Body() request: CreateVmRequest): Promise<VmRecord> {
    return this.vms.spawn(request);
  }

  @Get('vms')
  @ApiOperation({
    operationId: 'listNodeVms',
    summary: "This node's VMs, as its heartbeat reports them",
  })
  @ApiOkResponse({ type: [VmRecord] })
  list(): Promise<VmRecord[]> {
    return this.vms.list();
  }

  @Delete('vms/:vm_id')
  @HttpCode(204)
  @ApiOperation({
    operationId: 'destroyVm',
    summary: 'Stop the VM and remove its runtime files (the disk stays)',
  })
  @ApiNoContentResponse({ description: 'Destroyed.' })
  @ApiBadRequestResponse({ type: ErrorBody })
  @ApiNotFoundResponse({ type: ErrorBody })
  destroy(@Param() { vm_id }: VmIdParams): Promise<void> {
    return this.vms.destroy(vm_id);
  }
}
