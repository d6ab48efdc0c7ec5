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
