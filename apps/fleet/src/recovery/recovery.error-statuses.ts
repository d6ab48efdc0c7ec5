import { DomainErrorStatuses } from '@app/daemon';
import { DeclareDeadRefusedError } from './recovery.errors';

/** The recovery feature's errors and their statuses; the ops app's table gathers them. */
export const RECOVERY_ERROR_STATUSES: DomainErrorStatuses = [
  [DeclareDeadRefusedError, (error) => (error as DeclareDeadRefusedError).status],
];
