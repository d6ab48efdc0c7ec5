import { DomainErrorStatuses } from '@app/daemon';
import { REPLICAS_ERROR_STATUSES } from './replicas/replicas.error-statuses';
import { VMS_ERROR_STATUSES } from './vms/vms.error-statuses';
import { MOVES_ERROR_STATUSES } from './moves/moves.error-statuses';

/**
 * Every domain error the agent's services throw, and the HTTP status it answers with: each
 * feature's own rows, for the one error filter.
 */
export const VM_HOST_ERROR_STATUSES: DomainErrorStatuses = [
  ...VMS_ERROR_STATUSES,
  ...REPLICAS_ERROR_STATUSES,
  ...MOVES_ERROR_STATUSES,
];
