import type { DomainErrorStatuses } from '@app/daemon';
import { NodeNotFoundError } from './nodes/nodes.errors';
import { StoreUnavailableError } from './redis/store-unavailable.error';
import { AgentCallError } from './vms/vm-host.client';
import { PlacementRefusedError, VmNotFoundError } from './vms/vms.errors';

/** Every domain error the controller's services throw, and the HTTP status it answers with. */
export const FLEET_ERROR_STATUSES: DomainErrorStatuses = [
  [NodeNotFoundError, 404],
  [VmNotFoundError, 404],
  [
    PlacementRefusedError,
    (error) => ((error as PlacementRefusedError).reason === 'preferred-node-unfit' ? 422 : 503),
  ],
  [AgentCallError, 502],
  [StoreUnavailableError, 503],
];
