import { ExecutionContext, UnauthorizedException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { CallerRecordedByRoute, OPERATOR, setCallerOf } from '@app/daemon';
import { TenantVmGuard } from './tenant-vm.guard';
import { VmNotFoundError } from './vms.errors';
import { VmsService } from './vms.service';

class Routes {
  vmRoute(): void {}
  @CallerRecordedByRoute()
  pageRoute(): void {}
}

describe('TenantVmGuard (the API listener)', () => {
  const vms = {
    findWithNode: (vmId: string) =>
      vmId === 'vm-acme'
        ? Promise.resolve({ vm: { tenant_id: 'acme' } })
        : Promise.reject(new VmNotFoundError(vmId)),
  } as unknown as VmsService;
  const guard = new TenantVmGuard(vms, new Reflector());

  function run(request: object, handler: keyof Routes = 'vmRoute'): boolean | Promise<boolean> {
    const context = {
      switchToHttp: () => ({ getRequest: () => request }),
      getHandler: () =>
        Object.getOwnPropertyDescriptor(Routes.prototype, handler)!.value as () => void,
    } as unknown as ExecutionContext;
    return guard.canActivate(context);
  }

  it('refuses a VM route no guard recorded a caller for, a page route too: no route guard runs after it', () => {
    expect(() => run({ params: { vm_id: 'vm-other' } })).toThrow(UnauthorizedException);
    expect(() => run({ params: { vm_id: 'vm-other' } }, 'pageRoute')).toThrow(
      UnauthorizedException,
    );
  });

  it('lets a route naming no VM and the operator through at once, a tenant to its own VM only', async () => {
    expect(run({ params: {} })).toBe(true);
    expect(run({})).toBe(true);
    const operator = { params: { vm_id: 'vm-other' } };
    setCallerOf(operator, OPERATOR);
    expect(run(operator)).toBe(true);
    const tenant = { params: { vm_id: 'vm-acme' } };
    setCallerOf(tenant, { kind: 'tenant', tenantId: 'acme' });
    await expect(run(tenant)).resolves.toBe(true);
    const other = { params: { vm_id: 'vm-acme' } };
    setCallerOf(other, { kind: 'tenant', tenantId: 'globex' });
    await expect(run(other)).rejects.toBeInstanceOf(VmNotFoundError);
    const missing = { params: { vm_id: 'vm-gone' } };
    setCallerOf(missing, { kind: 'tenant', tenantId: 'acme' });
    await expect(run(missing)).rejects.toBeInstanceOf(VmNotFoundError);
  });
});
