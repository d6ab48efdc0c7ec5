import { ApiErrors, DomainErrorStatuses, ErrorCase } from '@app/daemon';
import { LoopbackWgIpError, NodeNotFoundError, NotThisNodesTokenError } from './nodes.errors';
import { StoreUnavailableError } from './store-unavailable.error';

/** The nodes feature's errors and their statuses; the app's table gathers every feature's. */
export const NODES_ERROR_STATUSES: DomainErrorStatuses = [
  [NodeNotFoundError, 404],
  [NotThisNodesTokenError, 401],
  [LoopbackWgIpError, 400],
];

/** The store of fleet state unreachable: any route that reads or writes that state. */
export const STORE_ERROR_STATUSES: DomainErrorStatuses = [[StoreUnavailableError, 503]];

const STORE_UNAVAILABLE: ErrorCase = {
  name: 'store-unavailable',
  when: 'Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached, or refuses (protected mode DENIED, NOAUTH, WRONGPASS, a READONLY replica: the message names which and quotes Redis); nothing was changed.',
  error: new StoreUnavailableError(
    'fleet state store (Redis at redis://192.0.2.9:6379/0) unavailable: not connected (reconnecting)',
  ),
};

/**
 * Declares the errors of an operation on the fleet state, each with the body the app's filter
 * sends for it: `cases`, mapped by `statuses` (the feature's own rows), and the store's 503,
 * which comes with every one because every route reads or writes that state.
 */
export function ApiFleetStateErrors(
  statuses: DomainErrorStatuses,
  ...cases: ErrorCase[]
): MethodDecorator & ClassDecorator {
  return ApiErrors([...statuses, ...STORE_ERROR_STATUSES], ...cases, STORE_UNAVAILABLE);
}
