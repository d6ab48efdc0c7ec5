/**
 * The placement rules refused the request: 422 for an unfit preferred node or a host_port held
 * on every node with room, 503 for no room.
 */
export class PlacementRefusedError extends Error {
  constructor(
    readonly reason: 'preferred-node-unfit' | 'no-capacity' | 'ports-taken',
    message: string,
  ) {
    super(message);
  }
}

export class VmNotFoundError extends Error {
  constructor(readonly vmId: string) {
    super(`vm ${vmId} is not listed on any live node`);
  }
}

/**
 * The VM's node dropped out (its agent stopped or cut off): no agent can be asked to destroy
 * it, and its QEMU may still run. The record stays until the node heartbeats again. With
 * `listedBy`, the node id heartbeats again, but from another agent that does not list the VM
 * (a SilentVm): the agent that listed it, named so, may still run it.
 */
export class VmOnSilentNodeError extends Error {
  constructor(
    readonly vmId: string,
    readonly nodeId: string,
    lastHeartbeat: string,
    silentForS: number,
    listedBy?: string,
  ) {
    super(
      listedBy === undefined
        ? `vm ${vmId} is on node ${nodeId}, silent since ${lastHeartbeat} (${silentForS.toFixed(0)} s): no agent can destroy it, and its QEMU may still run. Start the node's agent again with the same VM_NODE_ID and VM_DISK_DIR, then delete again; if the machine is gone for good, DELETE /v1/vms/${vmId}?forget=true forgets the record (stopping nothing)`
        : `vm ${vmId} was listed on node ${nodeId} by ${listedBy} until ${lastHeartbeat} (${silentForS.toFixed(0)} s ago); the agent heartbeating as ${nodeId} now does not list it, so no agent can destroy it, and its QEMU may still run there. Start that machine's agent with its own VM_DISK_DIR and a VM_NODE_ID of its own, then delete again; if that machine is gone for good, DELETE /v1/vms/${vmId}?forget=true forgets the record (stopping nothing)`,
    );
  }
}

/**
 * ?forget=true for a VM whose node heartbeats (again): its agent can destroy it, so the record
 * is not forgotten (forgetting would leave it running, listed again at the next heartbeat).
 */
export class VmNodeIsBackError extends Error {
  constructor(
    readonly vmId: string,
    readonly nodeId: string,
  ) {
    super(
      `vm ${vmId}: node ${nodeId} is back (it heartbeats), so nothing is forgotten; DELETE /v1/vms/${vmId} without forget destroys it`,
    );
  }
}

/** The client's Idempotency-Key already made a VM from another request body. */
export class IdempotencyKeyReusedError extends Error {
  constructor() {
    super(
      'Idempotency-Key was already used with another request body (a retry must repeat the request exactly); use a new key for a new VM',
    );
  }
}

/**
 * A create with the client's Idempotency-Key is still being made by another controller after
 * the most a create waits for it (see KEY_CLAIM_WAIT_MS): the client retries with the same key.
 */
export class IdempotencyKeyClaimWaitError extends Error {
  constructor() {
    super(
      'a create with this Idempotency-Key is still in progress on another controller; retry with the same key',
    );
  }
}

/**
 * The first dispatch of the client's Idempotency-Key went to a node that has neither answered
 * nor can be asked now (it stopped heartbeating): until its spawn's deadline has passed, as
 * that agent's clock may read it, it may still make the VM, so no other node is asked. The
 * client retries with the same key after `retryAfterS`.
 */
export class IdempotencyKeyUnresolvedError extends Error {
  constructor(
    readonly nodeId: string,
    readonly retryAfterS: number,
  ) {
    super(
      `the first dispatch of this Idempotency-Key, to node ${nodeId}, is unanswered and that node is silent: it may still make the VM until its deadline; retry with the same key in ${retryAfterS} s`,
    );
  }
}

/**
 * The node's agent refused the VM and said why in a JSON error body: the host cannot hold it
 * (422), its disk folder has no room (507), or it failed (500). The message passes on the
 * agent's own, cleaned and shortened (see agentErrorMessage).
 */
export class NodeRefusedVmError extends Error {
  /** A 422 naming a host_port the create asked for (taken or reserved there), not the VM's size. */
  readonly hostPortTaken: boolean;
  /** A 422 saying the node has no free host port left for any VM (its range all bound or held). */
  readonly hostPortsExhausted: boolean;
  /** A 422 saying the VM's disk does not fit in the node's disk room (VM_DISK_DIR). */
  readonly diskRoom: boolean;
  /** A 422 saying disk_gb is below the base image's size: the request's problem, not the node's. */
  readonly diskTooSmall: boolean;

  constructor(
    readonly nodeId: string,
    readonly agentStatus: 422 | 500 | 507,
    agentMessage: string,
  ) {
    super(`node ${nodeId} refused the VM: ${agentMessage}`);
    this.hostPortTaken = agentStatus === 422 && /^ports\[\d+\]\.host_port: /.test(agentMessage);
    this.hostPortsExhausted =
      agentStatus === 422 && /^no free (tcp|udp) host port /.test(agentMessage);
    this.diskRoom =
      agentStatus === 422 &&
      /(^|; )disk_gb: .* does not fit in this node's disk room/.test(agentMessage);
    this.diskTooSmall =
      agentStatus === 422 && /^disk_gb: .* is smaller than the base image/.test(agentMessage);
  }
}
