import { createHmac } from 'node:crypto';
import { IsBearerToken } from './environment';

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

/** Shortest fleet node secret (VM_FLEET_NODE_SECRET): it is the key of every node's token. */
export const MIN_NODE_SECRET_LENGTH = 32;

/**
 * The node secret variable: the rules of the other tokens (IsBearerToken: characters, at most
 * 1024), but at least MIN_NODE_SECRET_LENGTH characters. Shared by the controller and
 * `ppn-fleet node-token`, so both accept the same secrets.
 */
export function IsNodeSecret(variable = '$property'): PropertyDecorator {
  return IsBearerToken(variable, MIN_NODE_SECRET_LENGTH);
}
