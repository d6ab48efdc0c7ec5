import { agentConflictOf, describeAgentConflict } from './agent-conflicts';

const VM = 'vm-00000000000000a1';

describe("an agent's 409, in the controller's words", () => {
  it.each([
    [`vm ${VM} is already stopped`, `vm ${VM} on node n1 is already stopped`],
    [`vm ${VM} is already running`, `vm ${VM} on node n1 is already running`],
    [
      `vm ${VM} is being created; try again once it is Running`,
      `vm ${VM} on node n1 is still being created; try the stop again once it is Running`,
    ],
    [
      `vm ${VM} is already restarting`,
      `vm ${VM} on node n1 is already restarting; try the stop again once that has ended`,
    ],
    [
      `vm ${VM} is already being changed`,
      `vm ${VM} on node n1 is already being changed; try the stop again once that has ended`,
    ],
    [
      `vm ${VM} cannot be read on its node (sidecar unreadable); only a delete acts on it`,
      `vm ${VM} on node n1 cannot be read by its agent (its record on the node is unreadable); only a delete acts on it`,
    ],
  ])('maps "%s" to a fixed answer naming the VM and node', (agentMessage, answer) => {
    expect(describeAgentConflict(VM, 'n1', 'stop', agentConflictOf(VM, agentMessage))).toBe(answer);
  });

  it.each([
    [
      'backups are off on this node (VM_BACKUP_DIR is not set)',
      "node n1 keeps no backups (its agent's VM_BACKUP_DIR is not set)",
    ],
    [
      `vm ${VM} is already being backed up`,
      `vm ${VM} on node n1 is already being backed up; ppn-fleet vm copies ${VM} shows when it is taken`,
    ],
  ])('maps a backup\'s "%s" to a fixed answer', (agentMessage, answer) => {
    expect(describeAgentConflict(VM, 'n1', 'backup', agentConflictOf(VM, agentMessage))).toBe(
      answer,
    );
  });

  it.each([
    ['another VM', 'vm vm-other is already stopped'],
    ['other words', `vm ${VM} is already stopped; \u001b[31mrm -rf /`],
    ['an operation it does not have', `vm ${VM} is already dancing`],
    ['a prefix only', `vm ${VM} is already stopped, and more`],
    ['no message', undefined],
    ['backups off, with more', 'backups are off on this node (VM_BACKUP_DIR is not set); ls /'],
  ])('answers anything else (%s) with the generic text, nothing of it passed on', (_, message) => {
    expect(describeAgentConflict(VM, 'n1', 'start', agentConflictOf(VM, message))).toBe(
      `vm ${VM} on node n1: its agent refused the start as conflicting with the VM's state there`,
    );
  });
});
