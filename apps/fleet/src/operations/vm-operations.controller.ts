import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  BODY_ERRORS,
  Caller,
  RequestCaller,
  RequiresToken,
  TenantScoped,
  invalidInput,
} from '@app/daemon';
import {
  ApiAcceptedResponse,
  ApiCreatedResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  EXAMPLE_NODE_ID,
  EXAMPLE_VM_ID,
  FleetVmBackups,
  FleetVmWithLifeCycle,
  RestartVmRequest,
  RestoreVmRequest,
  RestoredVm,
  StopVmRequest,
  TenantQuery,
  VmConsole,
  VmConsoleQuery,
  VmIdParams,
  VmLifeCycle,
} from '@app/fleet-domain';
import { ApiFleetStateErrors } from '../nodes/nodes.error-statuses';
import { TenantQuotaBusyError, TenantQuotaExceededError } from '../tenants/tenants.errors';
import { OtherTenantError } from '../tenants/tenants.errors';
import { listedTenantFor } from '../tenants/tenant-scope';
import { VmOperationsService } from './vm-operations.service';
import { VmRestoreRefusedError } from './vm-restore.errors';
import { VmRestoreService } from './vm-restore.service';
import { PlacementRefusedError } from '../vms/vms.errors';
import { VmAgentFailedError } from './vm-operations.errors';
import {
  INVALID_VM_ID,
  NO_ROOM,
  STATUSES,
  VM_NOT_FOUND,
  WRITE_REFUSALS,
  WRONG_HOST,
  actionErrors,
} from './vm-operations.api-errors';

/**
 * The operations listener's routes on VMs: the listing with life cycles, and the actions sent
 * to the agent of the VM's node.
 */
@ApiTags('vms')
@RequiresToken('api')
@Controller('v1/vms')
export class VmOperationsController {
  constructor(
    private readonly operations: VmOperationsService,
    private readonly restores: VmRestoreService,
  ) {}

  @Get()
  @ApiOperation({
    operationId: 'listVmsWithLifeCycles',
    summary: 'VMs on the nodes with their life cycles, optionally of one tenant',
    description:
      "Every VM as the API's GET /v1/vms lists it, each with its life cycle from its node's agent: life_cycle is null for a VM whose agent did not answer usably in time, or which no live agent manages (node_silent_since). The agents are asked at most once per 2 s (or 4 times what the last asking took, when longer), 16 at a time, all within 3 s, and every reader in between shares that answer: a life cycle may be that old, but for an action's outcome taken meanwhile.",
  })
  @ApiOkResponse({ type: [FleetVmWithLifeCycle], description: 'The VMs; [] when there are none.' })
  @ApiFleetStateErrors(
    STATUSES,
    WRONG_HOST,
    invalidInput(
      'tenant_id is not a fleet id.',
      'tenant_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
    ),
    {
      name: 'other-tenant',
      when: "Only with a tenant's token (VM_FLEET_TENANT_SECRET): tenant_id names another tenant.",
      error: new OtherTenantError('acme', 'tenant_id'),
    },
  )
  @TenantScoped()
  listVms(
    @Query() { tenant_id }: TenantQuery,
    @RequestCaller() caller: Caller,
  ): Promise<FleetVmWithLifeCycle[]> {
    return this.operations.listVms(listedTenantFor(caller, tenant_id));
  }

  @Get(':vm_id')
  @ApiOperation({
    operationId: 'getVm',
    summary: 'One VM with its life cycle',
    description:
      "The VM as the listing shows it, its life cycle asked of its node's agent (null as in the listing). What `ppn-fleet vm stop|start|restart --wait` follows.",
  })
  @ApiOkResponse({ type: FleetVmWithLifeCycle, description: 'The VM.' })
  @ApiFleetStateErrors(STATUSES, WRONG_HOST, INVALID_VM_ID, VM_NOT_FOUND)
  @TenantScoped()
  getVm(@Param() { vm_id }: VmIdParams): Promise<FleetVmWithLifeCycle> {
    return this.operations.getVm(vm_id);
  }

  @Post(':vm_id/stop')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'stopVm',
    summary: "Have the VM's node stop it, and keep it stopped",
    description:
      "Sent to the agent of the VM's node: the guest is asked to power down (ACPI) and QEMU is ended after timeout_s, or at once with force. The VM's desired state becomes stopped: its agent does not start it again after a reboot or crash. The stop goes on on the node; the answer is the life cycle as it began (operation stopping).",
  })
  @ApiAcceptedResponse({ type: VmLifeCycle, description: 'The stop was taken by the agent.' })
  @ApiFleetStateErrors(
    STATUSES,
    WRONG_HOST,
    ...WRITE_REFUSALS,
    ...BODY_ERRORS,
    invalidInput(
      'vm_id is not a fleet id, or force or timeout_s is not what it must be; the message names each.',
      'timeout_s must not be less than 1',
    ),
    ...actionErrors('stop'),
  )
  @TenantScoped()
  stopVm(@Param() { vm_id }: VmIdParams, @Body() request: StopVmRequest): Promise<VmLifeCycle> {
    return this.operations.stopVm(vm_id, request);
  }

  @Post(':vm_id/start')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'startVm',
    summary: "Have the VM's node start it again",
    description:
      "Sent to the agent of the VM's node, which starts the stopped VM (its desired state becomes running again). The answer is the life cycle as the start began (operation starting); a 422 when the node has no room for it now.",
  })
  @ApiAcceptedResponse({ type: VmLifeCycle, description: 'The start was taken by the agent.' })
  @ApiFleetStateErrors(
    STATUSES,
    WRONG_HOST,
    ...WRITE_REFUSALS,
    INVALID_VM_ID,
    ...actionErrors('start'),
    NO_ROOM,
  )
  @TenantScoped()
  startVm(@Param() { vm_id }: VmIdParams): Promise<VmLifeCycle> {
    return this.operations.startVm(vm_id);
  }

  @Post(':vm_id/restart')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'restartVm',
    summary: "Have the VM's node restart it",
    description:
      "Sent to the agent of the VM's node: without force, stopped as a stop does (timeout_s) and started again in a new process; with force, reset in place at once. The answer is the life cycle as the restart began (operation restarting).",
  })
  @ApiAcceptedResponse({ type: VmLifeCycle, description: 'The restart was taken by the agent.' })
  @ApiFleetStateErrors(
    STATUSES,
    WRONG_HOST,
    ...WRITE_REFUSALS,
    ...BODY_ERRORS,
    invalidInput(
      'vm_id is not a fleet id, or force or timeout_s is not what it must be; the message names each.',
      'timeout_s must not be less than 1',
    ),
    ...actionErrors('restart'),
    NO_ROOM,
  )
  @TenantScoped()
  restartVm(
    @Param() { vm_id }: VmIdParams,
    @Body() request: RestartVmRequest,
  ): Promise<VmLifeCycle> {
    return this.operations.restartVm(vm_id, request);
  }

  @Get(':vm_id/console')
  @ApiOperation({
    operationId: 'readVmConsole',
    summary: "A part of the VM's serial console",
    description:
      "Read by the agent of the VM's node from the VM's console log, as printable text. Without from, the last max_bytes; a follower passes the last answer's next as from (reset says the log began again, a new boot).",
  })
  @ApiOkResponse({ type: VmConsole, description: 'The text, and where to read from next.' })
  @ApiFleetStateErrors(
    STATUSES,
    WRONG_HOST,
    invalidInput(
      'vm_id is not a fleet id, or from or max_bytes is out of its range; the message names each.',
      'max_bytes must not be greater than 1048576',
    ),
    ...actionErrors('console read'),
  )
  @TenantScoped()
  readConsole(@Param() { vm_id }: VmIdParams, @Query() query: VmConsoleQuery): Promise<VmConsole> {
    return this.operations.readConsole(vm_id, query);
  }

  @Post(':vm_id/backups')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'backUpVm',
    summary: "Have the VM's node back it up to its VM_BACKUP_DIR now",
    description:
      "Sent to the agent of the VM's node, which answers at once (in_progress_since set) and copies the VM after any other backup under way there: a running VM by QEMU while it runs (full, or the clusters written since its chain's last backup), a stopped one from its file. GET .../backups shows it once taken, or last_error.",
  })
  @ApiAcceptedResponse({
    type: FleetVmBackups,
    description: 'The backup was taken on by the agent.',
  })
  @ApiFleetStateErrors(
    STATUSES,
    WRONG_HOST,
    ...WRITE_REFUSALS,
    INVALID_VM_ID,
    ...actionErrors('backup'),
  )
  @TenantScoped()
  backUpVm(@Param() { vm_id }: VmIdParams): Promise<FleetVmBackups> {
    return this.operations.backUpVm(vm_id);
  }

  @Get(':vm_id/backups')
  @ApiOperation({
    operationId: 'listVmBackups',
    summary: "The VM's backups on its node, newest first",
    description:
      "Read by the agent of the VM's node from its VM_BACKUP_DIR: each backup (a file of a qcow2 chain, full or incremental), where, when and how large; the backup under way and the last failure.",
  })
  @ApiOkResponse({ type: FleetVmBackups })
  @ApiFleetStateErrors(STATUSES, WRONG_HOST, INVALID_VM_ID, ...actionErrors('backups read'))
  @TenantScoped()
  listBackups(@Param() { vm_id }: VmIdParams): Promise<FleetVmBackups> {
    return this.operations.listBackups(vm_id);
  }

  @Post(':vm_id/restore')
  @HttpCode(201)
  @ApiOperation({
    operationId: 'restoreVm',
    summary: 'Bring a VM back from a copy or a backup, on a node of your choice',
    description:
      "Restores the VM from `from`: a node id (the copy that node holds of it), or a backup id (`<chain_id>/<index>`, or a chain id for its newest file) in the VM_BACKUP_DIR of the node named by `to` (a backup of any VM: a folder copied there from a dead node is read the same); absent, the freshest copy on any live node (or, with `to`, the copy that node holds, else the newer of its newest backup and the freshest copy on another live node). `at`: the newest file taken at or before it. `to` absent: the node holding the copy; `to` a node that does not hold it: that node's agent pulls the copy from its holder first (a short-lived read grant signed with the holder's token, the chain checked against its manifest and with qemu-img in a private staging folder before it becomes the VM's disk). The VM keeps its id (its guest sees the same instance: same host keys), tenant, size and published ports (the same host ports where free on that node, else new ones). A VM a live node lists is refused (409) unless `as_new` (a new id, new ports, beside the original). The target's RAM is held as for a create. Once its agent made the VM, it is listed on that node only, and the node it was on, should it come back, is told in its heartbeat answer (superseded_vm_ids) to stop it and set its disk aside.",
  })
  @ApiCreatedResponse({ type: RestoredVm, description: 'The VM, made and starting on its node.' })
  @ApiFleetStateErrors(
    STATUSES,
    WRONG_HOST,
    ...WRITE_REFUSALS,
    ...BODY_ERRORS,
    invalidInput(
      'vm_id is not a fleet id, or a field of the body is not what it must be; the message names each.',
      'to must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
    ),
    {
      name: 'unknown-vm',
      when: 'The controller has no record of the VM and no live node holds a copy of it (nor, with `to`, a backup).',
      error: new VmRestoreRefusedError(
        404,
        `vm ${EXAMPLE_VM_ID} is not known here and no live node holds a copy of it; restore it from a backup: from <backup_id> with to <node>`,
      ),
    },
    {
      name: 'still-running',
      when: 'A live node lists the VM (and as_new is not set), another restore of it is under way, or the target node has a VM with its id. Nothing was made.',
      error: new VmRestoreRefusedError(
        409,
        `vm ${EXAMPLE_VM_ID} still runs on node ${EXAMPLE_NODE_ID} (its live agent lists it): delete it there first, or restore it as a new VM beside it (as_new)`,
      ),
    },
    {
      name: 'no-such-copy',
      when: "The copy or backup cannot be had where named: a node not live, one holding no copy, a backup without `to`, none at or before `at`; or the target's agent refused (no room, a damaged file, a pull from the holder that failed). The message names the field and where the VM's copies are. Nothing was made.",
      error: new VmRestoreRefusedError(
        422,
        `to: node n3 holds no copy and no backup of vm ${EXAMPLE_VM_ID}; no live node holds a copy of vm ${EXAMPLE_VM_ID}`,
      ),
    },
    {
      name: 'over-quota',
      when: 'A new VM (as_new), or one the controller no longer counts, would take its tenant beyond a quota (VM_FLEET_TENANT_QUOTAS_FILE), as a create would: each one named with its use and limit; nothing is made.',
      error: new TenantQuotaExceededError('acme', [
        { quota: 'vms', use: 5, limit: 5, requested: 1 },
      ]),
    },
    {
      name: 'tenant-quota-busy',
      when: "Other creates of the same tenant held its quota's check for longer than 15 s; retry.",
      error: new TenantQuotaBusyError('acme'),
    },
    {
      name: 'no-ram',
      when: "The target node's RAM cannot hold the VM, as for a create with preferred_node.",
      error: new PlacementRefusedError(
        'preferred-node-unfit',
        `preferred_node ${EXAMPLE_NODE_ID} has 1024 MB available, the VM needs 2048 MB`,
      ),
    },
    {
      name: 'agent-failed',
      when: "The target node's agent could not be reached, or answered what its API does not give.",
      error: new VmAgentFailedError(EXAMPLE_VM_ID, EXAMPLE_NODE_ID, 'restore', 'unreachable'),
    },
  )
  restoreVm(
    @Param() { vm_id }: VmIdParams,
    @Body() request: RestoreVmRequest,
  ): Promise<RestoredVm> {
    return this.restores.restore(vm_id, request);
  }
}
