import { DomainErrorStatuses } from '@app/daemon';
import { VmMoveFailedError, VmMoveRefusedError } from './vm-move.errors';

export const MOVES_ERROR_STATUSES: DomainErrorStatuses = [
  [VmMoveRefusedError, (error) => (error as VmMoveRefusedError).status],
  [VmMoveFailedError, 502],
];
