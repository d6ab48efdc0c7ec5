import type { DomainErrorStatuses } from '@app/daemon';
import { BaseImageMissingError, VmNotOnNodeError } from './vms/vms.errors';

/** Every domain error the agent's services throw, and the HTTP status it answers with. */
export const VM_HOST_ERROR_STATUSES: DomainErrorStatuses = [
  [VmNotOnNodeError, 404],
  [BaseImageMissingError, 503],
];
