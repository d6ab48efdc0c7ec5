import { Body, Controller, HttpCode, Param, Post, Req, UseGuards } from '@nestjs/common';
import type { Request } from 'express';
import { OwnCredentials, callerOf } from '@app/daemon';
import {
  ApiExcludeController,
  RestoreVmRequest,
  StopVmRequest,
  VmIdParams,
} from '@app/fleet-domain';
import { OperatorOnlyError } from '../tenants/tenants.errors';
import { createdTenantFor } from '../tenants/tenant-scope';
import { ConsoleCreateVmRequest, Outcome, createRequestOf } from './console.requests';
import { ConsoleService } from './console.service';
import { ConsoleSessionGuard, scopeOf } from './console-session.guard';

/**
 * The web console's actions (POST /console/vms and /console/vms/{id}/<action>), sent by the
 * page's script with the session's CSRF token: each answers the outcome in the controller's
 * words. The pages are ConsoleController's.
 */
@ApiExcludeController()
@OwnCredentials()
@UseGuards(ConsoleSessionGuard)
@Controller()
export class ConsoleActionsController {
  constructor(private readonly console: ConsoleService) {}

  @Post('console/vms')
  @HttpCode(201)
  async create(@Body() request: ConsoleCreateVmRequest, @Req() req: Request): Promise<Outcome> {
    const vm = await this.console.createVm(
      createdTenantFor(callerOf(req), createRequestOf(request)),
    );
    return { message: `vm ${vm.vm_id} created on node ${vm.node_id} (${vm.state})` };
  }

  @Post('console/vms/:vm_id/stop')
  @HttpCode(202)
  async stop(@Param() { vm_id }: VmIdParams, @Body() request: StopVmRequest): Promise<Outcome> {
    const lifeCycle = await this.console.stopVm(vm_id, request);
    return {
      message: `vm ${vm_id}: stop taken by its node (${lifeCycle.operation ?? lifeCycle.state})`,
    };
  }

  @Post('console/vms/:vm_id/start')
  @HttpCode(202)
  async start(@Param() { vm_id }: VmIdParams): Promise<Outcome> {
    const lifeCycle = await this.console.startVm(vm_id);
    return {
      message: `vm ${vm_id}: start taken by its node (${lifeCycle.operation ?? lifeCycle.state})`,
    };
  }

  @Post('console/vms/:vm_id/restart')
  @HttpCode(202)
  async restart(@Param() { vm_id }: VmIdParams): Promise<Outcome> {
    const lifeCycle = await this.console.restartVm(vm_id);
    return {
      message: `vm ${vm_id}: restart taken by its node (${lifeCycle.operation ?? lifeCycle.state})`,
    };
  }

  @Post('console/vms/:vm_id/delete')
  @HttpCode(200)
  async delete(@Param() { vm_id }: VmIdParams): Promise<Outcome> {
    await this.console.deleteVm(vm_id, false);
    return { message: `vm ${vm_id} deleted` };
  }

  @Post('console/vms/:vm_id/restore')
  @HttpCode(201)
  async restore(
    @Param() { vm_id }: VmIdParams,
    @Body() request: RestoreVmRequest,
  ): Promise<Outcome> {
    const restored = await this.console.restoreVm(vm_id, request);
    return {
      message: `vm ${restored.vm.vm_id} restored on node ${restored.vm.node_id} from ${restored.point.source} ${restored.point.backup_id} (taken ${restored.point.taken_at}); starting`,
    };
  }

  @Post('console/vms/:vm_id/forget')
  @HttpCode(200)
  async forget(@Param() { vm_id }: VmIdParams, @Req() req: Request): Promise<Outcome> {
    // A tenant forgetting its silent VMs would free its quota while they may still run.
    const tenant = scopeOf(req);
    if (tenant !== undefined) throw new OperatorOnlyError(tenant, 'forgetting a VM');
    await this.console.deleteVm(vm_id, true);
    return { message: `vm ${vm_id} forgotten: nothing was stopped on its node` };
  }
}
