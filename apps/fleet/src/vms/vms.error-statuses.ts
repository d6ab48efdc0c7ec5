import { DomainErrorStatuses } from '@app/daemon';
import { PortsConflictError } from '@app/fleet-domain';
import { AgentCallError } from './agent-calls';
import {
  IdempotencyKeyClaimWaitError,
  IdempotencyKeyReusedError,
  IdempotencyKeyUnresolvedError,
  NodeRefusedVmError,
  PlacementRefusedError,
  VmNodeIsBackError,
  VmNotFoundError,
  VmOnSilentNodeError,
} from './vms.errors';

/** The vms feature's errors and their statuses; the app's table gathers every feature's. */
export const VMS_ERROR_STATUSES: DomainErrorStatuses = [
  [PortsConflictError, 400],
  [VmNotFoundError, 404],
  [VmOnSilentNodeError, 409],
  [VmNodeIsBackError, 409],
  [
    PlacementRefusedError,
    (error) => ((error as PlacementRefusedError).reason === 'no-capacity' ? 503 : 422),
  ],
  [IdempotencyKeyReusedError, 422],
  [IdempotencyKeyClaimWaitError, 503],
  [IdempotencyKeyUnresolvedError, 503],
  // What the agent answered is passed on, except that its own failure is a bad gateway here.
  [
    NodeRefusedVmError,
    (error) => {
      const { agentStatus } = error as NodeRefusedVmError;
      return agentStatus === 500 ? 502 : agentStatus;
    },
  ],
  [AgentCallError, 502],
];
