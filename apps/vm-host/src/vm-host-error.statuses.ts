import { ApiErrors, DomainErrorStatuses, ErrorCase } from '@app/daemon';
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
  // Full: 507 Insufficient Storage; a folder the agent may not write is its own fault.
  [VmDiskError, (error) => ((error as VmDiskError).full ? 507 : 500)],
  [VmStillRunningError, 500],
];

/** Declares the errors of an agent operation, each with the body this agent's filter sends. */
export function ApiVmHostErrors(...cases: ErrorCase[]): MethodDecorator & ClassDecorator {
  return ApiErrors(VM_HOST_ERROR_STATUSES, ...cases);
}
