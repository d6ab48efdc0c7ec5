/** A move this node cannot take part in as asked (the VM's state, its machine, a move under way). */
export class MoveRefusedError extends Error {
  constructor(
    message: string,
    readonly status: 409 | 422 = 422,
  ) {
    super(message);
  }
}

/** A move refused for what the VM is (its state, a move under way here): 409. */
export class MoveConflictError extends MoveRefusedError {
  constructor(message: string) {
    super(message, 409);
  }
}

/** No incoming move of that VM is under way here (ended, timed out, or this agent restarted): 404. */
export class IncomingMoveGoneError extends Error {
  constructor(vmId: string) {
    super(`no move of vm ${vmId} to this node is under way (ended, or cut short): start it again`);
  }
}

/**
 * A move that failed midway: the VM is left where it ran before (the old node runs it again), the
 * message says where it failed: 502 (another node's part, or QEMU's, failed).
 */
export class MoveFailedError extends Error {}
