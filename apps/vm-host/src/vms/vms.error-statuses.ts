import { ApiErrors, DomainErrorStatuses, ErrorCase } from '@app/daemon';
import { PortsConflictError } from '@app/fleet-domain';
import {
  HostPortUnavailableError,
  HostPortsExhaustedError,
  IdempotencyKeyInvalidError,
  IdempotencyKeyReusedError,
  SpawnDeadlinePassedError,
  VmCreationUnavailableError,
  VmDiskError,
  VmActionConflictError,
  VmDoesNotFitError,
  VmDiskTooSmallError,
  VmIdTakenError,
  VmNotOnNodeError,
  VmStillRunningError,
} from './vms.errors';
import { VmBackupRefusedError } from './copies/vm-backups.errors';
import { RestoreSourceError } from './copies/vm-restores.errors';

/** Every domain error the VM services throw, and the HTTP status it answers with. */
export const VMS_ERROR_STATUSES: DomainErrorStatuses = [
  [PortsConflictError, 400],
  [VmNotOnNodeError, 404],
  [VmCreationUnavailableError, 503],
  [IdempotencyKeyInvalidError, 400],
  [IdempotencyKeyReusedError, 422],
  [VmDoesNotFitError, 422],
  [VmDiskTooSmallError, 422],
  [HostPortUnavailableError, 422],
  [HostPortsExhaustedError, 422],
  [VmActionConflictError, 409],
  [VmIdTakenError, 409],
  [SpawnDeadlinePassedError, 409],
  [VmBackupRefusedError, 409],
  [RestoreSourceError, (error) => (error as RestoreSourceError).status],
  // Full: 507 Insufficient Storage; a folder the agent may not write is its own fault.
  [VmDiskError, (error) => ((error as VmDiskError).full ? 507 : 500)],
  [VmStillRunningError, 500],
];

/** Declares the errors of a VM operation, each with the body the agent's filter sends. */
export function ApiVmsErrors(...cases: ErrorCase[]): MethodDecorator & ClassDecorator {
  return ApiErrors(VMS_ERROR_STATUSES, ...cases);
}
