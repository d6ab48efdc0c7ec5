import { ExecutionContext, UnauthorizedException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { isCallerRecordedByRoute, recordedCallerOf } from '@app/daemon';
import { VmNotFoundError } from './vms.errors';
import { VmsService } from './vms.service';

/**
 * Confines a tenant to its own VMs on every route that names one (a `vm_id` parameter), on
 * either listener and in the web console alike, before the route runs: another tenant's VM,
 * a VM of no tenant and a VM that does not exist are the same 404, so a tenant learns nothing
 * of VMs not its own. One check for every route, so a per-VM route added later is covered.
 * The operator (and any caller while the API is open: the guard records the operator then)
 * passes untouched. A route naming a VM that no guard recorded a caller for is refused (401),
 * never taken for the operator's: a route whose guard forgot to record fails closed.
 * Run by TenantVmGuard on the API (9203) and by TenantVmInterceptor on the operations listener.
 */
export class TenantVmCheck {
  constructor(
    private readonly vms: VmsService,
    private readonly reflector: Reflector,
  ) {}

  /**
   * Throws at once for a VM route with no caller recorded; otherwise undefined when there is
   * nothing to wait for, or a promise settled once the tenant's VM is checked.
   * `afterRouteGuards`: the routes' own guards have run, so a route marked
   * CallerRecordedByRoute (a console page) has had its chance to record one. Before them (a
   * global guard), such a route is refused as any other without a caller: it fails closed.
   */
  judge(context: ExecutionContext, afterRouteGuards: boolean): Promise<void> | undefined {
    const request = context.switchToHttp().getRequest<Request>();
    const vmId = (request.params as Record<string, unknown> | undefined)?.vm_id;
    if (typeof vmId !== 'string') return undefined;
    const caller = recordedCallerOf(request);
    if (caller === undefined) {
      if (afterRouteGuards && isCallerRecordedByRoute(this.reflector, context)) return undefined;
      throw new UnauthorizedException('no credential was recognised for this route');
    }
    if (caller.kind !== 'tenant') return undefined;
    return this.checkOwn(caller.tenantId, vmId);
  }

  private async checkOwn(tenantId: string, vmId: string): Promise<void> {
    const listed = await this.vms.findWithNode(vmId).catch((error: unknown) => {
      if (error instanceof VmNotFoundError) return undefined;
      throw error;
    });
    if (listed?.vm.tenant_id !== tenantId) throw new VmNotFoundError(vmId);
  }
}
