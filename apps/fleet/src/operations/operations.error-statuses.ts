import { DomainErrorStatuses } from '@app/daemon';
import {
  VmActionConflictError,
  VmAgentFailedError,
  VmNodeSilentError,
  VmNotOnItsNodeError,
  VmStartNoRoomError,
} from './vm-operations.errors';
import { VmRestoreRefusedError } from './vm-restore.errors';

/** The operations feature's errors and their statuses; the ops app's table gathers them. */
export const OPERATIONS_ERROR_STATUSES: DomainErrorStatuses = [
  [VmNodeSilentError, 409],
  [VmActionConflictError, 409],
  [VmNotOnItsNodeError, 404],
  [VmStartNoRoomError, 422],
  [VmAgentFailedError, 502],
  [VmRestoreRefusedError, (error) => (error as VmRestoreRefusedError).status],
];
