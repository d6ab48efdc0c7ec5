import { ApiErrors, DomainErrorStatuses, ErrorCase } from '@app/daemon';
import { NodeNotFoundError } from './nodes/nodes.errors';
import { StoreUnavailableError } from './redis/store-unavailable.error';
import { AgentCallError } from './vms/vm-host.client';
import {
  IdempotencyKeyReusedError,
  NodeRefusedVmError,
  PlacementRefusedError,
  VmNotFoundError,
} from './vms/vms.errors';

/** Every domain error the controller's services throw, and the HTTP status it answers with. */
export const FLEET_ERROR_STATUSES: DomainErrorStatuses = [
  [NodeNotFoundError, 404],
  [VmNotFoundError, 404],
  [
    PlacementRefusedError,
    (error) => ((error as PlacementRefusedError).reason === 'preferred-node-unfit' ? 422 : 503),
  ],
  [IdempotencyKeyReusedError, 422],
  // What the agent answered is passed on, except that its own failure is a bad gateway here.
  [
    NodeRefusedVmError,
    (error) => {
      const { agentStatus } = error as NodeRefusedVmError;
      return agentStatus === 500 ? 502 : agentStatus;
    },
  ],
  [AgentCallError, 502],
  [StoreUnavailableError, 503],
];

/** Every route reads or writes the fleet state, so each can find a shared store down. */
const STORE_UNAVAILABLE: ErrorCase = {
  name: 'store-unavailable',
  when: 'Only with VM_FLEET_REDIS_URL set: the shared state store (Redis) cannot be reached; nothing was changed.',
  error: new StoreUnavailableError(
    'fleet state store (Redis at redis://192.0.2.9:6379/0) unavailable: not connected (reconnecting)',
  ),
};

/**
 * Declares the errors of a controller operation, each with the body this controller's filter
 * sends for it; the shared store's 503 comes with every one.
 */
export function ApiFleetErrors(...cases: ErrorCase[]): MethodDecorator & ClassDecorator {
  return ApiErrors(FLEET_ERROR_STATUSES, ...cases, STORE_UNAVAILABLE);
}
