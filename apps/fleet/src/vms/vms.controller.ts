import {
  BadRequestException,
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Post,
  Query,
  Res,
} from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiHeader,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@app/fleet-domain';
import {
  BODY_ERRORS,
  Caller,
  ErrorCase,
  RequestCaller,
  RequiresToken,
  TenantScoped,
  invalidInput,
} from '@app/daemon';
import type { Response } from 'express';
import {
  CreateVmRequest,
  DeleteVmQuery,
  EXAMPLE_NODE_ID,
  EXAMPLE_VM_ID,
  FleetVm,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_PATTERN,
  IDEMPOTENCY_KEY_RULE,
  PlacementRequest,
  TenantQuery,
  VmIdParams,
  placeVm,
} from '@app/fleet-domain';
import { ApiFleetStateErrors } from '../nodes/nodes.error-statuses';
import {
  OperatorOnlyError,
  OtherTenantError,
  TenantDiskSizeRequiredError,
  TenantQuotaBusyError,
  TenantQuotaExceededError,
} from '../tenants/tenants.errors';
import { IdempotencyKey } from './idempotency-key.decorator';
import { createdTenantFor, listedTenantFor } from '../tenants/tenant-scope';
import { AgentCallError } from './agent-calls';
import {
  IdempotencyKeyClaimWaitError,
  IdempotencyKeyReusedError,
  IdempotencyKeyUnresolvedError,
  NodeRefusedVmError,
  PlacementRefusedError,
  VmNodeIsBackError,
  VmNotFoundError,
  VmOnSilentNodeError,
} from './vms.errors';
import { TENANTS_ERROR_STATUSES } from '../tenants/tenants.error-statuses';
import { VMS_ERROR_STATUSES as VMS_ONLY } from './vms.error-statuses';

/** The statuses this controller's errors answer with: its own and the tenants'. */
const VMS_ERROR_STATUSES = [...VMS_ONLY, ...TENANTS_ERROR_STATUSES];
import { VmPlacementService } from './vm-placement.service';
import { VmsService } from './vms.service';

/** How placement refuses `request` on an empty fleet, word for word as the service throws it. */
function refusal(name: string, when: string, request: PlacementRequest): ErrorCase {
  const placement = placeVm(request, []);
  if (placement.kind === 'placed') throw new Error(`the example of "${when}" was placed`);
  return { name, when, error: new PlacementRefusedError(placement.kind, placement.message) };
}

/** The agent could not be reached, as the client hears it: the same whatever the cause. */
function agentUnreachable(when: string): ErrorCase {
  return {
    name: 'agent-unreachable',
    when: `${when} The answer is the same whatever is at the node's address; the controller's log has the detail.`,
    // As a timeout or a reset leaves it: the agent may have seen the request.
    error: new AgentCallError(
      `agent of node ${EXAMPLE_NODE_ID} could not be reached`,
      'unreachable',
      false,
    ),
  };
}

/** A tenant's token naming another tenant, as a list's filter or a create's body. */
const OTHER_TENANT: ErrorCase = {
  name: 'other-tenant',
  when: "Only with a tenant's token (VM_FLEET_TENANT_SECRET): tenant_id names another tenant.",
  error: new OtherTenantError('acme', 'tenant_id'),
};

@ApiTags('vms')
@RequiresToken('api')
@TenantScoped()
@Controller('v1/vms')
export class VmsController {
  constructor(
    private readonly vms: VmsService,
    private readonly placement: VmPlacementService,
  ) {}

  @Get()
  @ApiOperation({
    operationId: 'listVms',
    summary: 'VMs on the nodes, optionally of one tenant',
    description:
      'Every VM the live nodes reported in their last heartbeat (and those created since). There is no GET of one VM by id: filter this list. A node that falls silent (its agent stopped or cut off) leaves every node listing after 30 s, but its VMs, which may still run, stay listed as it last reported them, with node_silent_since, until it heartbeats again (which replaces those it lists; any it does not list, as when another machine now heartbeats with the same node id, stay listed with node_silent_since) or each is forgotten (DELETE with ?forget=true). A VM is listed once: as a live node reports it, when one does.',
  })
  @ApiOkResponse({
    type: [FleetVm],
    description: 'The VMs, each with the node it runs on; [] when there are none.',
  })
  @ApiFleetStateErrors(
    VMS_ERROR_STATUSES,
    invalidInput(
      'tenant_id is not a fleet id.',
      'tenant_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
    ),
    OTHER_TENANT,
  )
  listVms(
    @Query() { tenant_id }: TenantQuery,
    @RequestCaller() caller: Caller,
  ): Promise<FleetVm[]> {
    return this.vms.listVms(listedTenantFor(caller, tenant_id));
  }

  @Post()
  @ApiOperation({
    operationId: 'createVm',
    summary: "Place a VM on a node and have that node's agent start it",
    description:
      "Advisory placement, then dispatch: with preferred_node, that node or a 422; otherwise the node with room for ram_mb + 512 MB (non-reserved nodes first, reserved ones as a last resort; a KVM node first when prefer_kvm; then the most free RAM; nodes that missed two heartbeats are skipped). A refusal lists every live node considered and why each was passed over. The chosen node's agent is asked to start the VM and its answer is returned (state Provisioning). Nothing is ever moved afterwards.",
  })
  @ApiHeader({
    name: IDEMPOTENCY_KEY_HEADER,
    required: false,
    schema: { type: 'string', pattern: IDEMPOTENCY_KEY_PATTERN.source, maxLength: 128 },
    description:
      'Makes the create safe to retry: the same key with the same body answers the VM the first create made (200), never a second one, for a day; the same key with another body is a 422.',
  })
  @ApiCreatedResponse({
    type: FleetVm,
    description: 'Placed on node_id, and accepted by its agent.',
  })
  @ApiOkResponse({
    type: FleetVm,
    description: 'A retry: this Idempotency-Key already made this VM.',
  })
  @ApiFleetStateErrors(
    VMS_ERROR_STATUSES,
    ...BODY_ERRORS,
    invalidInput(
      'A field is missing or out of its range; the message names each one.',
      'ram_mb must not be less than 1',
    ),
    {
      name: 'invalid-idempotency-key',
      when: 'The Idempotency-Key header is not 1-128 characters of the allowed set.',
      error: new BadRequestException(
        `${IDEMPOTENCY_KEY_HEADER} header must be ${IDEMPOTENCY_KEY_RULE}`,
      ),
    },
    refusal(
      'preferred-node-unfit',
      'preferred_node is not listed or has less than ram_mb available.',
      {
        ram_mb: 2048,
        prefer_kvm: false,
        preferred_node: EXAMPLE_NODE_ID,
      },
    ),
    {
      name: 'idempotency-key-reused',
      when: 'The Idempotency-Key was already used with another request body.',
      error: new IdempotencyKeyReusedError(),
    },
    {
      name: 'node-refused',
      when: "The chosen node's agent refused the VM: its reason (e.g. ram_mb beyond what it can hold) follows.",
      error: new NodeRefusedVmError(
        EXAMPLE_NODE_ID,
        422,
        'ram_mb: 1048576 MB does not fit on this node: 20480 MB committable of 24576 MB (margin 512 MB)',
      ),
    },
    {
      name: 'node-disk-full',
      when: "The chosen node's disk folder has no room for the VM (the agent's reason).",
      error: new NodeRefusedVmError(
        EXAMPLE_NODE_ID,
        507,
        'VM_DISK_DIR /var/lib/vm-fleet: no space left on device (ENOSPC) while making the disk; nothing of the VM was kept',
      ),
    },
    agentUnreachable(
      "The node's agent could not be reached, or did not answer within 10 s. A create without preferred_node tries the next best node (up to 3 in all, within 20 s) only when the request never reached this agent (connection refused, no route); a timeout or a reset is a 502 at once, as that agent may still be making the VM.",
    ),
    {
      name: 'agent-failed',
      when: "The node's agent failed the spawn: its own message follows when it gave one. An agent's 503 (it can make no VM) first sends a create without preferred_node on to the next best node, as an unreachable one does.",
      error: new AgentCallError(
        `agent of node ${EXAMPLE_NODE_ID} answered 503: VM_BASE_IMAGE /var/lib/vm-fleet/base.qcow2 does not exist or is not readable`,
        'failed',
        true,
      ),
    },
    {
      name: 'idempotency-key-in-progress',
      when: 'Another controller was still making a VM with this Idempotency-Key after 30 s; retry with the same key.',
      error: new IdempotencyKeyClaimWaitError(),
    },
    {
      name: 'idempotency-key-unresolved',
      when: "This Idempotency-Key's first dispatch went to a node that never answered and has stopped heartbeating: it may still make the VM until the spawn's deadline (plus 10 s for its clock), so no other node is asked before; retry with the same key then.",
      error: new IdempotencyKeyUnresolvedError('node-a', 12),
    },
    OTHER_TENANT,
    {
      name: 'over-quota',
      when: "The VM's tenant (VM_FLEET_TENANT_QUOTAS_FILE) would go beyond a quota: each one named with its use and limit; nothing is made.",
      error: new TenantQuotaExceededError('acme', [
        { quota: 'ram_mb', use: 7168, limit: 8192, requested: 2048 },
      ]),
    },
    {
      name: 'disk-size-required',
      when: 'The tenant has a disk_gb quota and the body has no disk_gb.',
      error: new TenantDiskSizeRequiredError('acme'),
    },
    {
      name: 'tenant-quota-busy',
      when: "Other creates of the same tenant held its quota's check for longer than 15 s; retry.",
      error: new TenantQuotaBusyError('acme'),
    },
    refusal(
      'no-room',
      'No live node has room for ram_mb + 512 MB: every node considered, and why each was passed over.',
      {
        ram_mb: 2048,
        prefer_kvm: false,
      },
    ),
  )
  async createVm(
    @Body() request: CreateVmRequest,
    @IdempotencyKey() idempotencyKey: string | undefined,
    @Res({ passthrough: true }) response: Response,
    @RequestCaller() caller: Caller,
  ): Promise<FleetVm> {
    const { vm, replayed } = await this.placement.createVm(
      createdTenantFor(caller, request),
      idempotencyKey,
    );
    if (replayed) response.status(200);
    return vm;
  }

  @Delete(':vm_id')
  @HttpCode(204)
  @ApiOperation({
    operationId: 'deleteVm',
    summary: "Have the owning node's agent destroy a VM",
    description:
      "Finds the node that lists the VM and asks its agent to destroy it (QEMU stopped, runtime files removed); the VM then leaves the listing. When the agent cannot be reached the record is kept and the answer is 502, so the delete can be retried. When the node has dropped out (silent for more than 30 s: its agent stopped or cut off), no agent can be asked: 409, the record kept, until the node's agent is started again; the same for a VM listed with node_silent_since on a live node (one that another agent now heartbeats for without listing it). ?forget=true forgets the record of such a VM instead (a machine gone for good), stopping nothing; for a VM a live agent manages it is a 409 (the node is back: DELETE without forget destroys it).",
  })
  @ApiNoContentResponse({
    description:
      'Destroyed (or already gone from its agent); with ?forget=true, a VM of a node that dropped out forgotten.',
  })
  @ApiFleetStateErrors(
    VMS_ERROR_STATUSES,
    invalidInput(
      'vm_id is not a fleet id.',
      'vm_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
    ),
    {
      name: 'invalid-forget',
      when: 'forget is neither true nor false.',
      error: new BadRequestException('forget must be one of the following values: true, false'),
    },
    {
      name: 'vm-not-found',
      when: 'No node lists a VM with this id.',
      error: new VmNotFoundError(EXAMPLE_VM_ID),
    },
    {
      name: 'node-silent',
      when: 'The VM is listed with node_silent_since: its node has dropped out (silent for more than 30 s), or its node id heartbeats again from another agent that does not list it. No agent can destroy it, and its QEMU may still run. The record is kept.',
      error: new VmOnSilentNodeError(
        EXAMPLE_VM_ID,
        EXAMPLE_NODE_ID,
        '2026-08-06T12:00:00.000Z',
        312,
      ),
    },
    {
      name: 'forget-operator-only',
      when: "Only with a tenant's token: ?forget=true is the operator's (a VM forgotten leaves its tenant's quota while it may still run).",
      error: new OperatorOnlyError('acme', '?forget=true'),
    },
    {
      name: 'node-back',
      when: '?forget=true for a VM a live agent manages (its node is back): nothing is forgotten.',
      error: new VmNodeIsBackError(EXAMPLE_VM_ID, EXAMPLE_NODE_ID),
    },
    agentUnreachable("The node's agent could not be reached, or did not answer within 10 s."),
  )
  deleteVm(
    @Param() { vm_id }: VmIdParams,
    @Query() { forget }: DeleteVmQuery,
    @RequestCaller() caller: Caller,
  ): Promise<void> {
    // A tenant forgetting its silent VMs would free its quota while they may still run.
    if (forget === 'true' && caller.kind === 'tenant') {
      throw new OperatorOnlyError(caller.tenantId, '?forget=true');
    }
    return this.vms.deleteVm(vm_id, forget === 'true');
  }
}
