import type { DomainErrorStatuses } from '@app/daemon';
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
