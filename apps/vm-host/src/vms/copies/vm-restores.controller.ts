import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import {
  AgentRestoreRequest,
  AgentRestoredVm,
  ApiCreatedResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  EXAMPLE_NODE_ID,
  EXAMPLE_VM_ID,
  EXAMPLE_WG_IP,
  RestorePoints,
  VmIdParams,
} from '@app/fleet-domain';
import { BODY_ERRORS, RequiresToken, invalidInput } from '@app/daemon';
import { ApiVmsErrors } from '../vms.error-statuses';
import {
  HostPortsExhaustedError,
  VmDiskError,
  VmDoesNotFitError,
  VmIdTakenError,
} from '../vms.errors';
import { RestoreSourceError } from './vm-restores.errors';
import { VmRestoresService } from './vm-restores.service';

/**
 * Restores on this node, called by the fleet controller's operations listener with this node's
 * token: the points it holds for a VM, and a VM made from one of them.
 */
@ApiTags('vm-restores')
@RequiresToken('node')
@Controller('v1/restores')
export class VmRestoresController {
  constructor(private readonly restores: VmRestoresService) {}

  @Get(':vm_id/points')
  @ApiOperation({
    operationId: 'listRestorePoints',
    summary: 'Where a VM can be restored from on this node, newest first',
    description:
      "The files of the chains this node holds for the VM: the copy a peer keeps here (VM_DISK_DIR/replicas/<vm_id>/) and the backups in VM_BACKUP_DIR/<vm_id>/ (any VM's, on this node or not: a folder copied from a dead node is read the same), with the VM as the newest chain's manifest describes it. [] and null when there are none; the VM need not be on this node.",
  })
  @ApiOkResponse({ type: RestorePoints })
  @ApiVmsErrors(
    invalidInput(
      'vm_id is not a fleet id.',
      'vm_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
    ),
  )
  points(@Param() { vm_id }: VmIdParams): Promise<RestorePoints> {
    return this.restores.points(vm_id);
  }

  @Post()
  @HttpCode(201)
  @ApiOperation({
    operationId: 'restoreVm',
    summary: 'Make a VM on this node from a copy or backup, and start it',
    description:
      "Admitted as a spawn is (RAM, vCPUs, disk room); its sidecar is written first, as the restore's intent: an agent killed before the disk is whole rolls the VM back at its next start, and one killed after starts it. The chosen file and the files before it in its chain are checked against their manifest (size, sha256), then converted into the VM's disk (qemu-img convert -O qcow2, into a partial file renamed once whole); the VM keeps vm_id (so its guest sees the same instance: same host keys) and gets each port on the same host port where free here, else a new one. Answers the VM (Provisioning) and the point it was made from; it starts after the answer.",
  })
  @ApiCreatedResponse({ type: AgentRestoredVm, description: 'The VM, made; starting.' })
  @ApiVmsErrors(
    ...BODY_ERRORS,
    invalidInput(
      'A field is missing or out of its range, or the source names neither or both of replica and backup_id; the message names each.',
      'source.backup_id must be <chain_id>/<index> or <chain_id>',
    ),
    {
      name: 'vm-id-taken',
      when: 'A VM with this vm_id is on this node already (or its run folder or disk is): nothing was made.',
      error: new VmIdTakenError(EXAMPLE_VM_ID),
    },
    {
      name: 'no-such-source',
      when: 'The source cannot be used: this node holds no copy of the VM, no such backup, none taken at or before `at`, backups are off here, or a file of the chain does not match its manifest. Nothing was made.',
      error: new RestoreSourceError(
        `source.backup_id: no backup 20261205T041700Z-3f2a/0003 of vm ${EXAMPLE_VM_ID} in this node's VM_BACKUP_DIR`,
      ),
    },
    {
      name: 'does-not-fit',
      when: 'The node cannot hold the VM (RAM, vCPUs, or its disk in the disk room); the message names the numbers.',
      error: new VmDoesNotFitError(
        'ram_mb: 1048576 MB does not fit on this node: 20480 MB committable of 24576 MB (margin 512 MB)',
      ),
    },
    {
      name: 'host-ports-exhausted',
      when: 'No free host port is left on VM_WG_IP for a port that must move.',
      error: new HostPortsExhaustedError(
        `no free tcp host port for vm ${EXAMPLE_VM_ID} on node ${EXAMPLE_NODE_ID} (${EXAMPLE_WG_IP}) in 32768-60999 (net.ipv4.ip_local_port_range): every port in it is bound; no VM was made`,
      ),
    },
    {
      name: 'disk-full',
      when: 'VM_DISK_DIR is full (ENOSPC, quota) while the disk was written; nothing of the VM was kept.',
      error: new VmDiskError('/var/lib/vm-fleet', 'ENOSPC', "making the restored VM's disk"),
    },
  )
  restore(@Body() request: AgentRestoreRequest): Promise<AgentRestoredVm> {
    return this.restores.restore(request);
  }
}
