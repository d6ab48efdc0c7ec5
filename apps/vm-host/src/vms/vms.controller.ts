import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Post, Res } from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiHeader,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@app/fleet-domain';
import { BODY_ERRORS, RequiresToken, invalidInput } from '@app/daemon';
import type { Response } from 'express';
import {
  EXAMPLE_NODE_ID,
  EXAMPLE_VM_ID,
  EXAMPLE_WG_IP,
  IDEMPOTENCY_KEY_HEADER,
  SPAWN_KEY_PATTERN,
  SpawnVmRequest,
  VmIdParams,
  VmRecord,
} from '@app/fleet-domain';
import { parseSpawnKey } from './admission/idempotency-key';
import {
  HostPortsExhaustedError,
  IdempotencyKeyInvalidError,
  IdempotencyKeyReusedError,
  VmCreationUnavailableError,
  VmDiskError,
  VmDoesNotFitError,
  SpawnDeadlinePassedError,
  VmDiskTooSmallError,
  VmIdTakenError,
  VmNotOnNodeError,
  VmStillRunningError,
} from './vms.errors';
import { ApiVmsErrors } from './vms.error-statuses';
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
    description:
      "What the fleet controller calls once it has placed a VM on this node. The agent checks the node can hold it (RAM after a 512 MB margin, vCPUs within VM_VCPU_OVERCOMMIT), makes it under the vm_id the controller minted (one of its own when the request has none; 409 when that id is taken here), makes its disk in VM_DISK_DIR (over VM_BASE_IMAGE, or a small blank image when that is unset) and seed ISO, answers with the new VM (state Provisioning), then starts QEMU; the VM's state (Running, or Error) shows in GET /v1/vms and the next heartbeat.",
  })
  @ApiHeader({
    name: IDEMPOTENCY_KEY_HEADER,
    required: false,
    description:
      "`<key_hash>.<request_hash>`: sha256 hex of the client's Idempotency-Key, a dot, sha256 hex of the canonical request. The agent keeps it with the VM for a day: the same value again answers that VM (200), the same key_hash with another request_hash is a 422.",
    schema: { type: 'string', pattern: SPAWN_KEY_PATTERN.source },
  })
  @ApiCreatedResponse({ type: VmRecord, description: 'A new VM, accepted; starting.' })
  @ApiOkResponse({
    type: VmRecord,
    description: 'The VM an earlier spawn with the same Idempotency-Key made; no new VM.',
  })
  @ApiVmsErrors(
    ...BODY_ERRORS,
    invalidInput(
      'A field is missing or out of its range; the message names each one.',
      'ram_mb must not be less than 1',
    ),
    {
      name: 'invalid-idempotency-key',
      when: 'The Idempotency-Key header is not in the form the controller sends.',
      error: new IdempotencyKeyInvalidError(
        'Idempotency-Key must be <key_hash>.<request_hash>: 64 lowercase hex digits, a dot, 64 more (129 characters)',
      ),
    },
    {
      name: 'does-not-fit',
      when: 'The node cannot hold the VM: the message names ram_mb or vcpu_count and the numbers, or the number of VMs it holds and the limit (MAX_VMS_PER_HEARTBEAT, 1024).',
      error: new VmDoesNotFitError(
        'ram_mb: 1048576 MB does not fit on this node: 20480 MB committable of 24576 MB (margin 512 MB)',
      ),
    },
    {
      name: 'disk-room',
      when: "The VM's disk (disk_gb, else the base image's size) does not fit in the node's disk room: every VM disk counted at its virtual size against VM_DISK_DIR's room less its reserve (times VM_DISK_OVERCOMMIT); the message names disk_gb and the numbers.",
      error: new VmDoesNotFitError(
        "disk_gb: 20.0 GiB does not fit in this node's disk room: 12.4 GiB committable of 60.4 GiB room in VM_DISK_DIR (reserve 2.0 GiB, 48.0 GiB committed to 12 other VM disk(s))",
      ),
    },
    {
      name: 'disk-too-small',
      when: "disk_gb is smaller than the base image's virtual size.",
      error: new VmDiskTooSmallError(
        'disk_gb: 2 GiB is smaller than the base image (4.0 GiB); ask for at least 4',
      ),
    },
    {
      name: 'host-ports-exhausted',
      when: "No free host port is left on VM_WG_IP for the VM's forwards (the kernel's range bound, or held by this node's VMs); nothing was made.",
      error: new HostPortsExhaustedError(
        `no free tcp host port for vm ${EXAMPLE_VM_ID} on node ${EXAMPLE_NODE_ID} (${EXAMPLE_WG_IP}) in 32768-60999 (net.ipv4.ip_local_port_range): every port in it is bound; no VM was made`,
      ),
    },
    {
      name: 'idempotency-key-reused',
      when: 'The Idempotency-Key was used for another request.',
      error: new IdempotencyKeyReusedError(
        `Idempotency-Key was used for another request (vm ${EXAMPLE_VM_ID}): a retry must repeat the request it was first sent with`,
      ),
    },
    {
      name: 'vm-id-taken',
      when: 'The vm_id the controller minted is already taken on this node (a VM, its run folder or its disk has it); nothing was made.',
      error: new VmIdTakenError(EXAMPLE_VM_ID),
    },
    {
      name: 'spawn-deadline-passed',
      when: "The spawn's deadline had passed by this agent's clock when it was read (the agent was frozen, or the request held up): the controller no longer waits for it; nothing was made.",
      error: new SpawnDeadlinePassedError(
        '2026-08-06T12:00:10.000Z',
        Date.UTC(2026, 7, 6, 12, 0, 41),
      ),
    },
    {
      name: 'disk-full',
      when: 'VM_DISK_DIR is full (ENOSPC, quota); nothing of the VM was kept.',
      error: new VmDiskError('/var/lib/vm-fleet', 'ENOSPC', 'making the disk'),
    },
    {
      name: 'disk-not-writable',
      when: 'VM_DISK_DIR may not be written (EACCES, EPERM, read-only); nothing of the VM was kept.',
      error: new VmDiskError('/var/lib/vm-fleet', 'EACCES', 'making the disk'),
    },
    {
      name: 'base-image-missing',
      when: 'VM_BASE_IMAGE names no readable file: this node cannot make VMs now.',
      error: new VmCreationUnavailableError(
        'VM_BASE_IMAGE /var/lib/vm-fleet/base.qcow2 does not exist or is not readable',
      ),
    },
  )
  async spawn(
    @Body() request: SpawnVmRequest,
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
    summary: 'Stop every process of the VM, remove its files, and put its disk aside',
    description:
      "Stops the VM's QEMU (quit, then SIGTERM, then SIGKILL), also one found by name when the agent lost its pid, and answers only once no process of the VM runs; then removes its runtime files and takes its disk out of use: moved to VM_DISK_DIR/deleted/ and removed once VM_DISK_RETENTION_S has passed (86400 s by default; 0 removes it at once). The VM leaves this node's list and its next heartbeat.",
  })
  @ApiNoContentResponse({ description: 'Destroyed: no process of the VM runs any more.' })
  @ApiVmsErrors(
    invalidInput(
      'vm_id is not a fleet id.',
      'vm_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
    ),
    {
      name: 'vm-not-found',
      when: 'This node has no VM with this id.',
      error: new VmNotOnNodeError(EXAMPLE_VM_ID),
    },
    {
      name: 'vm-still-running',
      when: 'A process of the VM outlived SIGKILL; the VM is kept.',
      error: new VmStillRunningError(
        `vm ${EXAMPLE_VM_ID}: QEMU pid 4242 still runs after quit, SIGTERM and SIGKILL; the VM is kept`,
      ),
    },
  )
  destroy(@Param() { vm_id }: VmIdParams): Promise<void> {
    return this.vms.destroy(vm_id);
  }
}
