/** The errors the operations routes answer, as their OpenAPI document shows them (see ApiErrors). */
import { ForbiddenException, MisdirectedException } from '@nestjs/common';
import { ErrorCase, invalidInput } from '@app/daemon';
import { EXAMPLE_NODE_ID, EXAMPLE_VM_ID } from '@app/fleet-domain';
import { TENANTS_ERROR_STATUSES } from '../tenants/tenants.error-statuses';
import { VMS_ERROR_STATUSES } from '../vms/vms.error-statuses';
import { VmNotFoundError } from '../vms/vms.errors';
import { agentConflictOf, describeAgentConflict } from './agent-conflicts';
import { OPERATIONS_ERROR_STATUSES } from './operations.error-statuses';
import {
  CROSS_SITE_MESSAGE,
  SIMPLE_REQUEST_MESSAGE,
  WRONG_HOST_MESSAGE,
} from './ops-listener.http';
import {
  VmAction,
  VmActionConflictError,
  VmAgentFailedError,
  VmNodeSilentError,
  VmNotOnItsNodeError,
  VmStartNoRoomError,
} from './vm-operations.errors';

export const STATUSES = [
  ...OPERATIONS_ERROR_STATUSES,
  ...VMS_ERROR_STATUSES,
  ...TENANTS_ERROR_STATUSES,
];

export const INVALID_VM_ID = invalidInput(
  'vm_id is not a fleet id.',
  'vm_id must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
);

/** What the listener refuses before any route (see guardOpsListener). */
export const WRONG_HOST: ErrorCase = {
  name: 'wrong-host',
  when: "The Host header names neither the listener's address, nor localhost on a loopback one, nor one of VM_FLEET_OPS_HOSTS (a DNS-rebound name, say).",
  error: new MisdirectedException(WRONG_HOST_MESSAGE('rebind.attacker.example:9206')),
};

/** What the listener refuses of a request that changes something, open or not. */
export const WRITE_REFUSALS: ErrorCase[] = [
  {
    name: 'cross-site',
    when: 'Sec-Fetch-Site or Origin says a page of another site sent it.',
    error: new ForbiddenException(CROSS_SITE_MESSAGE),
  },
  {
    name: 'simple-request',
    when: 'It carries neither Content-Type: application/json nor an Authorization header: what a cross-site form or no-CORS fetch sends.',
    error: new ForbiddenException(SIMPLE_REQUEST_MESSAGE),
  },
];

export const VM_NOT_FOUND: ErrorCase = {
  name: 'vm-not-found',
  when: 'No node lists a VM with this id.',
  error: new VmNotFoundError(EXAMPLE_VM_ID),
};

/** The errors every action on one VM may answer, besides its own. */
export function actionErrors(action: VmAction): ErrorCase[] {
  const conflict = (name: string, agentMessage: string): ErrorCase => ({
    name,
    when: `The agent refused: ${agentMessage.replace(EXAMPLE_VM_ID, '<vm_id>')}.`,
    error: new VmActionConflictError(
      EXAMPLE_VM_ID,
      EXAMPLE_NODE_ID,
      describeAgentConflict(
        EXAMPLE_VM_ID,
        EXAMPLE_NODE_ID,
        action,
        agentConflictOf(EXAMPLE_VM_ID, agentMessage),
      ),
    ),
  });
  // A read changes nothing: the agent has no state to refuse it for.
  const conflicts: ErrorCase[] =
    action === 'console read' || action === 'backups read'
      ? []
      : action === 'backup'
        ? [
            conflict('backups-off', 'backups are off on this node (VM_BACKUP_DIR is not set)'),
            conflict('backup-under-way', `vm ${EXAMPLE_VM_ID} is already being backed up`),
          ]
        : [
            ...(action === 'stop'
              ? [conflict('already-stopped', `vm ${EXAMPLE_VM_ID} is already stopped`)]
              : action === 'start'
                ? [conflict('already-running', `vm ${EXAMPLE_VM_ID} is already running`)]
                : []),
            conflict(
              'being-created',
              `vm ${EXAMPLE_VM_ID} is being created; try again once it is Running`,
            ),
            conflict('operation-under-way', `vm ${EXAMPLE_VM_ID} is already stopping`),
            conflict(
              'unreadable',
              `vm ${EXAMPLE_VM_ID} cannot be read on its node (sidecar unreadable); only a delete acts on it`,
            ),
            {
              name: 'agent-conflict',
              when: 'The agent refused with a 409 in other words: the answer does not quote it.',
              error: new VmActionConflictError(
                EXAMPLE_VM_ID,
                EXAMPLE_NODE_ID,
                describeAgentConflict(EXAMPLE_VM_ID, EXAMPLE_NODE_ID, action, { kind: 'other' }),
              ),
            },
          ];
  return [
    VM_NOT_FOUND,
    {
      name: 'node-silent',
      when: 'The VM is listed with node_silent_since: no live agent manages it, so none is asked.',
      error: new VmNodeSilentError(
        EXAMPLE_VM_ID,
        EXAMPLE_NODE_ID,
        action,
        '2026-08-06T12:00:00.000Z',
      ),
    },
    ...conflicts,
    {
      name: 'not-on-its-node',
      when: "The node's agent does not know the VM (deleted meanwhile): it leaves the listing at the next heartbeat.",
      error: new VmNotOnItsNodeError(EXAMPLE_VM_ID, EXAMPLE_NODE_ID),
    },
    {
      name: 'agent-unreachable',
      when: "The node's agent could not be reached, or did not answer within 10 s. The answer is the same whatever is at the node's address; the controller's log has the detail.",
      error: new VmAgentFailedError(EXAMPLE_VM_ID, EXAMPLE_NODE_ID, action, 'unreachable'),
    },
    {
      name: 'agent-failed',
      when: "The node's agent answered what its API does not give (another status, a body that is not its answer). Nothing of it is passed on; the controller's log has the detail.",
      error: new VmAgentFailedError(EXAMPLE_VM_ID, EXAMPLE_NODE_ID, action, 'failed'),
    },
  ];
}

export const NO_ROOM: ErrorCase = {
  name: 'no-room',
  when: "The node has no room to start the VM: the agent's reason follows, printable and at most 200 characters.",
  error: new VmStartNoRoomError(
    EXAMPLE_VM_ID,
    EXAMPLE_NODE_ID,
    'ram_mb: 2048 MB does not fit on this node: 1024 MB committable of 24576 MB (margin 512 MB)',
  ),
};
