/** What an operator asked of a VM, in the words the answers use. */
export type VmAction =
  | 'stop'
  | 'start'
  | 'restart'
  | 'console read'
  | 'backup'
  | 'backups read'
  | 'restore'
  | 'restore points read';

/**
 * The VM is listed with node_silent_since: no live agent manages it, so none is asked (its
 * QEMU may still run on a machine that is cut off).
 */
export class VmNodeSilentError extends Error {
  constructor(
    readonly vmId: string,
    readonly nodeId: string,
    action: VmAction,
    silentSince: string,
  ) {
    super(
      `vm ${vmId} is on node ${nodeId}, whose agent has not listed it since ${silentSince}: no agent can be asked for the ${action}. Start the node's agent again with the same VM_NODE_ID and VM_DISK_DIR, then try again`,
    );
  }
}

/** The agent refused the action because of the VM's state there (its 409), in fixed words. */
export class VmActionConflictError extends Error {
  constructor(
    readonly vmId: string,
    readonly nodeId: string,
    message: string,
  ) {
    super(message);
  }
}

/** The agent does not know the VM the store lists for its node (its 404). */
export class VmNotOnItsNodeError extends Error {
  constructor(
    readonly vmId: string,
    readonly nodeId: string,
  ) {
    super(
      `vm ${vmId} is not on node ${nodeId} any more (its agent does not know it); it leaves the listing at the node's next heartbeat`,
    );
  }
}

/**
 * The node has no room to start the VM (the agent's 422 to a start or restart): its reason,
 * printable and bounded (agentErrorMessage).
 */
export class VmStartNoRoomError extends Error {
  constructor(
    readonly vmId: string,
    readonly nodeId: string,
    agentReason: string | undefined,
  ) {
    super(
      `vm ${vmId} cannot be started on node ${nodeId}: ${agentReason ?? 'the node has no room for it'}`,
    );
  }
}

/**
 * The VM's agent could not be reached, or answered what its API does not give. The words are
 * the same whatever answered; the controller's log has the detail.
 */
export class VmAgentFailedError extends Error {
  constructor(
    readonly vmId: string,
    readonly nodeId: string,
    action: VmAction,
    readonly reason: 'unreachable' | 'failed',
  ) {
    super(
      reason === 'unreachable'
        ? `vm ${vmId}: the agent of node ${nodeId} could not be reached for the ${action}`
        : `vm ${vmId}: the agent of node ${nodeId} answered the ${action} unusably`,
    );
  }
}
