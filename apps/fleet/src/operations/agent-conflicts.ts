import { VmOperation } from '@app/fleet-domain';

/** Why the agent refused an action with 409, as its fixed messages say; `other` for any else. */
export type AgentConflict =
  | { kind: 'already-stopped' }
  | { kind: 'already-running' }
  | { kind: 'being-created' }
  | { kind: 'operation-under-way'; operation: VmOperation | 'being changed' }
  | { kind: 'unreadable' }
  | { kind: 'backups-off' }
  | { kind: 'backup-under-way' }
  | { kind: 'other' };

const ID = '[A-Za-z0-9][A-Za-z0-9._-]{0,127}';

/** A fixed message about one VM (its id captured first), to be matched whole. */
function vmMessage(rest: string): RegExp {
  return new RegExp(`^vm (${ID}) ${rest}$`);
}

/** The agent's fixed 409 messages (apps/vm-host's actions). */
const CONFLICTS: ReadonlyArray<{
  pattern: RegExp;
  conflict: (operation: string) => AgentConflict;
}> = [
  { pattern: vmMessage('is already stopped'), conflict: () => ({ kind: 'already-stopped' }) },
  { pattern: vmMessage('is already running'), conflict: () => ({ kind: 'already-running' }) },
  {
    pattern: vmMessage('is being created; try again once it is Running'),
    conflict: () => ({ kind: 'being-created' }),
  },
  {
    pattern: vmMessage('is already (stopping|restarting|starting|being changed)'),
    conflict: (operation) => ({
      kind: 'operation-under-way',
      operation: operation as VmOperation | 'being changed',
    }),
  },
  {
    pattern: vmMessage(
      'cannot be read on its node \\(sidecar unreadable\\); only a delete acts on it',
    ),
    conflict: () => ({ kind: 'unreadable' }),
  },
  {
    pattern: vmMessage('is already being backed up'),
    conflict: () => ({ kind: 'backup-under-way' }),
  },
];

/** The agent's one 409 that names no VM: a backup asked of a node without VM_BACKUP_DIR. */
const BACKUPS_OFF = 'backups are off on this node (VM_BACKUP_DIR is not set)';

/**
 * What an agent's 409 message says, matched whole against its fixed forms and for `vmId`
 * only: anything else (another VM's id, other words, no message) is `other`, so nothing of an
 * unexpected reply is passed on.
 */
export function agentConflictOf(vmId: string, message: string | undefined): AgentConflict {
  if (message === undefined) return { kind: 'other' };
  if (message === BACKUPS_OFF) return { kind: 'backups-off' };
  for (const { pattern, conflict } of CONFLICTS) {
    const match = pattern.exec(message);
    if (match && match[1] === vmId) return conflict(match[2]);
  }
  return { kind: 'other' };
}

/** The operator's answer to an agent's 409, in the controller's own fixed words. */
export function describeAgentConflict(
  vmId: string,
  nodeId: string,
  action: string,
  conflict: AgentConflict,
): string {
  const vm = `vm ${vmId} on node ${nodeId}`;
  switch (conflict.kind) {
    case 'already-stopped':
      return `${vm} is already stopped`;
    case 'already-running':
      return `${vm} is already running`;
    case 'being-created':
      return `${vm} is still being created; try the ${action} again once it is Running`;
    case 'operation-under-way':
      return `${vm} is already ${conflict.operation}; try the ${action} again once that has ended`;
    case 'unreadable':
      return `${vm} cannot be read by its agent (its record on the node is unreadable); only a delete acts on it`;
    case 'backups-off':
      return `node ${nodeId} keeps no backups (its agent's VM_BACKUP_DIR is not set)`;
    case 'backup-under-way':
      return `${vm} is already being backed up; ppn-fleet vm copies ${vmId} shows when it is taken`;
    case 'other':
      return `${vm}: its agent refused the ${action} as conflicting with the VM's state there`;
  }
}
