import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  EXAMPLE_VM_ID,
  RestartVmRequest,
  StopVmRequest,
  VmConsole,
  VmConsoleQuery,
  VmIdParams,
  VmLifeCycle,
} from '@app/fleet-domain';
import { BODY_ERRORS, ErrorCase, RequiresToken, invalidInput } from '@app/daemon';
import { VmActionsService } from './vm-actions.service';
import { ApiVmsErrors } from '../vms.error-statuses';
import {
  VmActionConflictError,
  VmDoesNotFitError,
  VmNotOnNodeError,
  VmStillRunningError,
} from '../vms.errors';

const BAD_VM_ID = invalidInput(
  'vm_id is not a fleet id.',
  'vm_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
);

const NOT_HERE: ErrorCase = {
  name: 'vm-not-found',
  when: 'This node has no VM with this id.',
  error: new VmNotOnNodeError(EXAMPLE_VM_ID),
};

/** The 409 of an action, with the fixed forms its message takes. */
function conflict(when: string, example: VmActionConflictError): ErrorCase {
  return {
    name: 'vm-conflict',
    when: `${when} The message is one of: "vm <id> is already stopped", "vm <id> is already running", "vm <id> is being created; try again once it is Running", "vm <id> is already <stopping|restarting|starting|being changed>", "vm <id> cannot be read on its node (sidecar unreadable); only a delete acts on it". Nothing was changed.`,
    error: example,
  };
}

const NO_ROOM: ErrorCase = {
  name: 'does-not-fit',
  when: 'The node has no room left to start the VM (its RAM and vCPUs beside every committed VM, as for a create); the message names the numbers. Nothing was changed: it stays stopped.',
  error: new VmDoesNotFitError(
    'ram_mb: 2048 MB does not fit on this node: 1024 MB committable of 8192 MB (margin 512 MB)',
  ),
};

/**
 * An operator's actions on this node's VMs, called by the fleet controller's operations
 * listener with this node's token: stop, start, restart, the serial console, and each VM's
 * life cycle (desired state, restarts, why it is not as asked).
 */
@ApiTags('vm-actions')
@RequiresToken('node')
@Controller('v1')
export class VmActionsController {
  constructor(private readonly actions: VmActionsService) {}

  @Get('vm-life-cycles')
  @ApiOperation({
    operationId: 'listVmLifeCycles',
    summary: "Every VM's life cycle on this node: state, desired state, restarts, reason",
    description:
      'What GET /v1/vms lists, with what operators need beside it: the state each VM should be in, an action under way, its restarts since it last ran steadily, how its process last ended, why it is not as asked, and when it is started again.',
  })
  @ApiOkResponse({ type: [VmLifeCycle], description: "This node's VMs; [] when there are none." })
  lifeCycles(): Promise<VmLifeCycle[]> {
    return this.actions.lifeCycles();
  }

  @Get('vm-life-cycles/:vm_id')
  @ApiOperation({
    operationId: 'getVmLifeCycle',
    summary: "One VM's life cycle on this node",
    description: 'As in the list of every VM, for one.',
  })
  @ApiOkResponse({ type: VmLifeCycle })
  @ApiVmsErrors(BAD_VM_ID, NOT_HERE)
  lifeCycle(@Param() { vm_id }: VmIdParams): Promise<VmLifeCycle> {
    return this.actions.lifeCycle(vm_id);
  }

  @Post('vms/:vm_id/stop')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'stopVm',
    summary:
      'Stop a VM: ACPI power-down, then its process ended after timeout_s (at once when forced)',
    description:
      "Writes the VM's desired state `stopped` (kept across agent restarts and reboots), answers at once, then asks the guest to power down (QMP system_powerdown, the ACPI button, pressed again every 5 s: a guest still booting misses a press) and ends QEMU once timeout_s passed (quit, SIGTERM, SIGKILL); with force, ends it at once. The disk is kept; the VM is listed Stopped once its process is gone and no longer commits its RAM. A VM that should run but has no process (a restart pending, a crash loop) is stopped too: it is not started again.",
  })
  @ApiAcceptedResponse({ type: VmLifeCycle, description: 'Stopping: its life cycle as of now.' })
  @ApiVmsErrors(
    ...BODY_ERRORS,
    invalidInput(
      'vm_id is not a fleet id, or a field is out of its range; the message names each.',
      'timeout_s must not be greater than 600',
    ),
    NOT_HERE,
    conflict(
      'The VM is stopped already, being created, or another action on it is under way.',
      VmActionConflictError.alreadyStopped(EXAMPLE_VM_ID),
    ),
    {
      name: 'vm-still-running',
      when: 'Never answered: a process that outlives SIGKILL is logged.',
      error: new VmStillRunningError(
        `vm ${EXAMPLE_VM_ID}: QEMU pid 4242 still runs after quit, SIGTERM and SIGKILL; the VM is kept`,
      ),
    },
  )
  stop(@Param() { vm_id }: VmIdParams, @Body() request: StopVmRequest): Promise<VmLifeCycle> {
    return this.actions.stop(vm_id, request);
  }

  @Post('vms/:vm_id/start')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'startVm',
    summary: 'Start a stopped VM again from its own disk',
    description:
      'Admits the VM as a create is (its RAM and vCPUs beside every committed VM), writes its desired state `running`, answers at once (Provisioning), then starts it from its own disk: same vm_id, overlay and cloud-init instance (no first boot again), same host ports where they are free. A start that fails is tried again with the restart backoff (5 s doubling to 5 min); after 3 failures in a row the VM is listed Error with the reason.',
  })
  @ApiAcceptedResponse({ type: VmLifeCycle, description: 'Starting: its life cycle as of now.' })
  @ApiVmsErrors(
    BAD_VM_ID,
    NOT_HERE,
    conflict(
      'The VM runs already, is being created, or another action on it is under way.',
      VmActionConflictError.alreadyRunning(EXAMPLE_VM_ID),
    ),
    NO_ROOM,
  )
  start(@Param() { vm_id }: VmIdParams): Promise<VmLifeCycle> {
    return this.actions.start(vm_id);
  }

  @Post('vms/:vm_id/restart')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'restartVm',
    summary: 'Restart a VM: a stop then a start (with force, a reset in place)',
    description:
      'A stop (ACPI power-down, timeout_s, then its process ended) then a start from its disk, in a new process; with force, a hardware reset of the running process (QMP system_reset). A VM without a process is started.',
  })
  @ApiAcceptedResponse({ type: VmLifeCycle, description: 'Restarting: its life cycle as of now.' })
  @ApiVmsErrors(
    ...BODY_ERRORS,
    invalidInput(
      'vm_id is not a fleet id, or a field is out of its range; the message names each.',
      'timeout_s must not be greater than 600',
    ),
    NOT_HERE,
    conflict(
      'The VM is being created, or another action on it is under way.',
      VmActionConflictError.busy(EXAMPLE_VM_ID, 'stopping'),
    ),
    NO_ROOM,
  )
  restart(@Param() { vm_id }: VmIdParams, @Body() request: RestartVmRequest): Promise<VmLifeCycle> {
    return this.actions.restart(vm_id, request);
  }

  @Get('vms/:vm_id/console')
  @ApiOperation({
    operationId: 'readVmConsole',
    summary: "A part of the VM's serial console log (of its current boot), made printable",
    description:
      "At most max_bytes (default 64 KiB, at most 1 MiB): from `from` when given (a follower passes the last answer's `next`), else the last ones. Terminal escapes and control characters other than tab and newline are left out. A log shorter than `from` belongs to a new boot: it is read from its start, with reset true.",
  })
  @ApiOkResponse({ type: VmConsole })
  @ApiVmsErrors(
    invalidInput(
      'vm_id is not a fleet id, or a field is out of its range; the message names each.',
      'max_bytes must not be greater than 1048576',
    ),
    NOT_HERE,
  )
  console(@Param() { vm_id }: VmIdParams, @Query() query: VmConsoleQuery): Promise<VmConsole> {
    return this.actions.console(vm_id, query);
  }
}
