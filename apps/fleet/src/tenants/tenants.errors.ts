import { QuotaExcess, describeQuotaExcesses } from '@app/fleet-domain';

/** A create would take its tenant beyond a quota (429): which, what is used and the limit. */
export class TenantQuotaExceededError extends Error {
  constructor(
    readonly tenantId: string,
    readonly excesses: readonly QuotaExcess[],
  ) {
    super(describeQuotaExcesses(tenantId, excesses));
  }
}

/** A tenant's token naming another tenant (a list's filter, a create's tenant_id): 403. */
export class OtherTenantError extends Error {
  constructor(tenantId: string, field: string) {
    super(`${field} names another tenant: tenant ${tenantId}'s token opens its own VMs only`);
  }
}

/**
 * A create under a disk_gb quota without disk_gb: the controller cannot know the base image's
 * size, so it cannot count the disk (422).
 */
export class TenantDiskSizeRequiredError extends Error {
  constructor(tenantId: string) {
    super(
      `disk_gb must be given: tenant ${tenantId} has a disk_gb quota, which counts each VM's disk_gb`,
    );
  }
}

/** Another create of the tenant held its quota's claim for longer than a create waits (503). */
export class TenantQuotaBusyError extends Error {
  constructor(tenantId: string) {
    super(`another create of tenant ${tenantId} is still being checked against its quota; retry`);
  }
}

/**
 * A tenant asking what only the operator may: forgetting a VM's record (a silent node's VM
 * forgotten frees the tenant's quota while its QEMU may still run): 403.
 */
export class OperatorOnlyError extends Error {
  constructor(tenantId: string, what: string) {
    super(
      `${what} needs the API token (VM_FLEET_API_TOKEN): tenant ${tenantId}'s token cannot do it`,
    );
  }
}
