import { createHmac } from 'node:crypto';

/** The fixed prefix of the HMAC message, versioned so the scheme can change without ambiguity. */
export const NODE_TOKEN_CONTEXT = 'ppn-node-token:v1:';

/**
 * Node `nodeId`'s own token under the fleet's node secret (VM_FLEET_NODE_SECRET):
 * base64url(HMAC-SHA256(key = secret, message = "ppn-node-token:v1:" + node_id)), unpadded.
 * Stateless, so every controller (and `ppn-fleet node-token`, and openssl) derives the same one.
 */
export function deriveNodeToken(secret: string, nodeId: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(NODE_TOKEN_CONTEXT + nodeId, 'utf8')
    .digest('base64url');
}
