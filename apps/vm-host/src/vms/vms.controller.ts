import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Post, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiCreatedResponse,
  ApiHeader,
  ApiInternalServerErrorResponse,
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
import { CreateVmRequest, ErrorBody, VmIdParams, VmRecord } from '@app/fleet-domain';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_PATTERN, parseSpawnKey } from './idempotency-key';
import { VmsService } from './vms.service';

/** The agent's local API, called by the fleet controller. */
@ApiTags('vms')
@RequiresToken('node')
@Controller('v1')
export class VmsController {
  constructor(private readonly vms: VmsService) {}

  @Post('spawn')
  @ApiOperation({
    operationId: 'spawnVm',
    summary:
      'Accept a VM (state Provisioning) once its files are made, and start it under QEMU after answering',
  })
  @ApiHeader({
    name: IDEMPOTENCY_KEY_HEADER,
    required: false,
    description:
      "`<key_hash>.<request_hash>`: sha256 hex of the client's Idempotency-Key, a dot, sha256 hex of the canonical request. The agent keeps it with the VM for a day: the same value again answers that VM (200), the same key_hash with another request_hash is a 422.",
    schema: { type: 'string', pattern: IDEMPOTENCY_KEY_PATTERN.source },
  })
  @ApiCreatedResponse({ type: VmRecord, description: 'A new VM.' })
  @ApiOkResponse({
    type: VmRecord,
    description: 'The VM an earlier spawn with the same Idempotency-Key made; no new VM.',
  })
  @ApiBadRequestResponse({ type: ErrorBody })
  @ApiUnprocessableEntityResponse({
    type: ErrorBody,
    description:
      'The node cannot hold the VM (the message names ram_mb or vcpu_count and the numbers), or the Idempotency-Key was used for another request.',
  })
  @ApiResponse({
    status: 507,
    type: ErrorBody,
    description: 'VM_DISK_DIR is full (ENOSPC, quota); nothing of the VM was kept.',
  })
  @ApiInternalServerErrorResponse({
    type: ErrorBody,
    description: 'VM_DISK_DIR may not be written (EACCES, read-only); nothing of the VM was kept.',
  })
  @ApiServiceUnavailableResponse({ type: ErrorBody, description: 'the base image is missing' })
  async spawn(
    @Body() request: CreateVmRequest,
    @Headers('idempotency-key') key: string | undefined,
    @Res({ passthrough: true }) response: Response,
  ): Promise<VmRecord> {
    const { vm, created } = await this.vms.spawn(request, parseSpawnKey(key));
    if (!created) response.status(200);
    return vm;
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
    summary: 'Stop every process of the VM, then remove its runtime files (the disk stays)',
  })
  @ApiNoContentResponse({ description: 'Destroyed: no process of the VM runs any more.' })
  @ApiBadRequestResponse({ type: ErrorBody })
  @ApiNotFoundResponse({ type: ErrorBody })
  @ApiInternalServerErrorResponse({
    type: ErrorBody,
    description: 'A process of the VM outlived SIGKILL; the VM is kept.',
  })
  destroy(@Param() { vm_id }: VmIdParams): Promise<void> {
    return this.vms.destroy(vm_id);
  }
}
