import type { DomainErrorStatuses } from '@app/daemon';
import {
  BaseImageMissingError,
  IdempotencyKeyInvalidError,
  IdempotencyKeyReusedError,
  VmDiskError,
  VmDoesNotFitError,
  VmNotOnNodeError,
  VmStillRunningError,
} from './vms/vms.errors';

/** Every domain error the agent's services throw, and the HTTP status it answers with. */
export const VM_HOST_ERROR_STATUSES: DomainErrorStatuses = [
  [VmNotOnNodeError, 404],
  [BaseImageMissingError, 503],
  [IdempotencyKeyInvalidError, 400],
  [IdempotencyKeyReusedError, 422],
  [VmDoesNotFitError, 422],
  [VmDiskError, (error) => (error as VmDiskError).status],
  [VmStillRunningError, 500],
];
