import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { TenantVmCheck } from './tenant-vm.check';
import { VmsService } from './vms.service';

/**
 * TenantVmCheck on the API (9203), as a global guard registered after the bearer-token guard
 * (which records the caller). A guard, not an interceptor: any global interceptor puts every
 * request, heartbeats included, through Nest's Observable chain, which cost a third of a
 * heartbeat's time. The API has no route with a guard of its own, so nothing records a caller
 * after this runs; a route marked CallerRecordedByRoute is refused here (see TenantVmCheck).
 */
@Injectable()
export class TenantVmGuard implements CanActivate {
  private readonly check: TenantVmCheck;

  constructor(vms: VmsService, reflector: Reflector) {
    this.check = new TenantVmCheck(vms, reflector);
  }

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const pending = this.check.judge(context, false);
    return pending ? pending.then(() => true) : true;
  }
}
