import { ExecutionContext, UnauthorizedException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { firstValueFrom, of } from 'rxjs';
import { CallerRecordedByRoute, OPERATOR, setCallerOf } from '@app/daemon';
import { TenantVmInterceptor } from './tenant-vm.interceptor';
import { VmNotFoundError } from './vms.errors';
import { VmsService } from './vms.service';

class Routes {
  vmRoute(): void {}
  @CallerRecordedByRoute()
  pageRoute(): void {}
}

describe('TenantVmInterceptor', () => {
  const vms = {
    findWithNode: (vmId: string) =>
      vmId === 'vm-acme'
        ? Promise.resolve({ vm: { tenant_id: 'acme' } })
        : Promise.reject(new VmNotFoundError(vmId)),
  } as unknown as VmsService;
  const interceptor = new TenantVmInterceptor(vms, new Reflector());

  function run(request: object, handler: keyof Routes = 'vmRoute'): Promise<unknown> {
    const context = {
      switchToHttp: () => ({ getRequest: () => request }),
      getHandler: () =>
        Object.getOwnPropertyDescriptor(Routes.prototype, handler)!.value as () => void,
    } as unknown as ExecutionContext;
    return firstValueFrom(interceptor.intercept(context, { handle: () => of('ran') }));
  }

  it('refuses a VM route no guard recorded a caller for, instead of taking it for the operator', () => {
    expect(() => run({ params: { vm_id: 'vm-other' } })).toThrow(UnauthorizedException);
  });

  it('lets the operator, a tenant on its own VM and a page route without a caller through', async () => {
    const operator = { params: { vm_id: 'vm-other' } };
    setCallerOf(operator, OPERATOR);
    await expect(run(operator)).resolves.toBe('ran');
    const tenant = { params: { vm_id: 'vm-acme' } };
    setCallerOf(tenant, { kind: 'tenant', tenantId: 'acme' });
    await expect(run(tenant)).resolves.toBe('ran');
    await expect(run({ params: { vm_id: 'vm-other' } }, 'pageRoute')).resolves.toBe('ran');
    const other = { params: { vm_id: 'vm-acme' } };
    setCallerOf(other, { kind: 'tenant', tenantId: 'globex' });
    await expect(run(other)).rejects.toBeInstanceOf(VmNotFoundError);
  });
});
