export class NodeNotFoundError extends Error {
  constructor(readonly nodeId: string) {
    super(`node ${nodeId} is not enrolled (or silent for more than 30 s)`);
  }
}

/**
 * With VM_FLEET_NODE_SECRET set, a heartbeat carried a token that is not its node's own (another
 * node's, the secret itself, anything else). The token is never echoed.
 */
export class NotThisNodesTokenError extends Error {
  constructor(readonly nodeId: string) {
    super(
      `the bearer token does not belong to node ${nodeId}: with per-node tokens (VM_FLEET_NODE_SECRET), a node heartbeats with its own token only, the one \`ppn-fleet node-token ${nodeId}\` prints (VM_FLEET_NODE_TOKEN on that node)`,
    );
  }
}

/**
 * A heartbeat named a loopback wg_ip but did not come from the controller's own machine: the
 * controller would call its own loopback services as that node's agent. Only an agent on the
 * controller's machine (the local developer route, `npm start`) heartbeats from loopback.
 */
export class LoopbackWgIpError extends Error {
  constructor(wgIp: string, from: string | undefined) {
    super(
      `wg_ip ${wgIp} is a loopback address, taken only from an agent on the controller's own machine (a heartbeat over loopback); this one came from ${from ?? 'an unknown address'}: set VM_WG_IP to the node's WireGuard address`,
    );
  }
}
