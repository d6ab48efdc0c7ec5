import { DomainErrorStatuses } from '@app/daemon';
import { NodeDrainRefusedError } from './node-drain.errors';

export const DRAINS_ERROR_STATUSES: DomainErrorStatuses = [
  [NodeDrainRefusedError, (error) => (error as NodeDrainRefusedError).status],
];
