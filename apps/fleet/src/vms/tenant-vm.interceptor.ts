import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Observable, from, switchMap } from 'rxjs';
import { TenantVmCheck } from './tenant-vm.check';
import { VmsService } from './vms.service';

/**
 * TenantVmCheck on the operations listener, where the web console's routes record their
 * caller with a guard of their own: an interceptor runs after every guard, so those routes
 * are judged with the caller they recorded.
 */
@Injectable()
export class TenantVmInterceptor implements NestInterceptor {
  private readonly check: TenantVmCheck;

  constructor(vms: VmsService, reflector: Reflector) {
    this.check = new TenantVmCheck(vms, reflector);
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const pending = this.check.judge(context, true);
    return pending ? from(pending).pipe(switchMap(() => next.handle())) : next.handle();
  }
}
