import { Caller } from '@app/daemon';
import { OtherTenantError } from './tenants.errors';

/**
 * The tenant a listing is confined to: a tenant's own (its `tenant_id` filter may only name
 * itself: another is a 403, not an empty list), the operator's filter as given.
 */
export function listedTenantFor(caller: Caller, tenantId: string | undefined): string | undefined {
  if (caller.kind === 'operator') return tenantId;
  if (tenantId !== undefined && tenantId !== caller.tenantId) {
    throw new OtherTenantError(caller.tenantId, 'tenant_id');
  }
  return caller.tenantId;
}

/**
 * The tenant a create is made in: a tenant's token makes it in its own (a body without
 * tenant_id gets it; one naming another is a 403); the operator's as the body says.
 */
export function createdTenantFor<T extends { tenant_id?: string | null }>(
  caller: Caller,
  request: T,
): T {
  if (caller.kind === 'operator') return request;
  if (request.tenant_id != null && request.tenant_id !== caller.tenantId) {
    throw new OtherTenantError(caller.tenantId, 'tenant_id');
  }
  request.tenant_id = caller.tenantId;
  return request;
}
