import { DomainErrorStatuses } from '@app/daemon';
import {
  OperatorOnlyError,
  OtherTenantError,
  TenantDiskSizeRequiredError,
  TenantQuotaBusyError,
  TenantQuotaExceededError,
} from './tenants.errors';

/** The tenants feature's errors and their statuses, on both listeners. */
export const TENANTS_ERROR_STATUSES: DomainErrorStatuses = [
  [TenantQuotaExceededError, 429],
  [OtherTenantError, 403],
  [OperatorOnlyError, 403],
  [TenantDiskSizeRequiredError, 422],
  [TenantQuotaBusyError, 503],
];
