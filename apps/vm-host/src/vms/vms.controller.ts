import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { BODY_ERRORS, RequiresToken, invalidInput } from '@app/daemon';
import { CreateVmRequest, EXAMPLE_VM_ID, VmIdParams, VmRecord } from '@app/fleet-domain';
import { ApiVmHostErrors } from '../vm-host-error.statuses';
import { BaseImageMissingError, VmNotOnNodeError } from './vms.errors';
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
    summary: 'Accept a VM (state Provisioning) and start it under QEMU after answering',
    description:
      "What the fleet controller calls once it has placed a VM on this node. The agent answers at once with the new VM (state Provisioning), then makes its disk in VM_DISK_DIR (over VM_BASE_IMAGE, or a small blank image when that is unset) and starts QEMU; the VM's state (Running, or Error) shows in GET /v1/vms and the next heartbeat.",
  })
  @ApiCreatedResponse({ type: VmRecord, description: 'Accepted; starting.' })
  @ApiVmHostErrors(
    ...BODY_ERRORS,
    invalidInput(
      'A field is missing or out of its range; the message names each one.',
      'ram_mb must not be less than 1',
    ),
    {
      name: 'base-image-missing',
      when: 'VM_BASE_IMAGE names no readable file: this node cannot make VMs now.',
      error: new BaseImageMissingError(
        'VM_BASE_IMAGE /var/lib/vm-fleet/base.qcow2 does not exist or is not readable',
      ),
    },
  )
  spawn(@Body() request: CreateVmRequest): Promise<VmRecord> {
    return this.vms.spawn(request);
  }

  @Get('vms')
  @ApiOperation({
    operationId: 'listNodeVms',
    summary: "This node's VMs, as its heartbeat reports them",
    description:
      'Every VM this agent keeps in VM_DISK_DIR, with its state as of now: the list the next heartbeat sends.',
  })
  @ApiOkResponse({ type: [VmRecord], description: "This node's VMs; [] when there are none." })
  list(): Promise<VmRecord[]> {
    return this.vms.list();
  }

  @Delete('vms/:vm_id')
  @HttpCode(204)
  @ApiOperation({
    operationId: 'destroyVm',
    summary: 'Stop the VM and remove its runtime files (the disk stays)',
    description:
      "Stops the VM's QEMU (quit, then SIGTERM, then SIGKILL) and removes its runtime files; the VM leaves this node's list and its next heartbeat. The disk image stays in VM_DISK_DIR.",
  })
  @ApiNoContentResponse({ description: 'Destroyed.' })
  @ApiVmHostErrors(
    invalidInput(
      'vm_id is not a fleet id.',
      'vm_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
    ),
    {
      name: 'vm-not-found',
      when: 'This node has no VM with this id.',
      error: new VmNotOnNodeError(EXAMPLE_VM_ID),
    },
  )
  destroy(@Param() { vm_id }: VmIdParams): Promise<void> {
    return this.vms.destroy(vm_id);
  }
}
