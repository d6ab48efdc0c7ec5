import { DomainErrorStatuses } from '@app/daemon';
import { NODES_ERROR_STATUSES, STORE_ERROR_STATUSES } from './nodes/nodes.error-statuses';
import { OPERATIONS_ERROR_STATUSES } from './operations/operations.error-statuses';
import { MOVES_ERROR_STATUSES } from './moves/vm-move.error-statuses';
import { DRAINS_ERROR_STATUSES } from './drains/node-drain.error-statuses';
import { RECOVERY_ERROR_STATUSES } from './recovery/recovery.error-statuses';
import { TENANTS_ERROR_STATUSES } from './tenants/tenants.error-statuses';
import { VMS_ERROR_STATUSES } from './vms/vms.error-statuses';

/**
 * Every domain error the controller's services throw, and the HTTP status it answers with:
 * each feature's own rows, for the app's JsonErrorFilter.
 */
export const FLEET_ERROR_STATUSES: DomainErrorStatuses = [
  ...NODES_ERROR_STATUSES,
  ...VMS_ERROR_STATUSES,
  ...TENANTS_ERROR_STATUSES,
  ...STORE_ERROR_STATUSES,
];

/** Every domain error the operations listener's services throw, and its status. */
export const FLEET_OPS_ERROR_STATUSES: DomainErrorStatuses = [
  ...OPERATIONS_ERROR_STATUSES,
  ...MOVES_ERROR_STATUSES,
  ...DRAINS_ERROR_STATUSES,
  ...RECOVERY_ERROR_STATUSES,
  ...VMS_ERROR_STATUSES,
  ...TENANTS_ERROR_STATUSES,
  ...STORE_ERROR_STATUSES,
];
