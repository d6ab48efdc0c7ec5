import { deriveNodeToken, tokensMatch } from '@app/daemon';
import type { NodeCredential } from '@app/fleet-domain';
import { FleetConfig } from '../config/fleet.config';

export type { NodeCredential };

/**
 * How to call a node's agent: with `token` (undefined: with none, the agents are open), or not
 * at all (`unusable`: why), when the controller has no token of the kind the node heartbeated
 * with, and sending any other would hand the node a credential it never showed.
 */
export type AgentToken = { token: string | undefined } | { unusable: string };

/**
 * The node tokens of the controller: with a node secret, each node's own, derived from its id
 * (stateless, so every controller on one Redis agrees without storing any); without one, the
 * shared VM_FLEET_NODE_TOKEN or none. Holds the secrets; never logs or returns them.
 */
export class NodeTokens {
  constructor(
    private readonly settings: {
      secret?: string;
      previousSecret?: string;
      sharedToken?: string;
    } = {},
  ) {}

  static fromConfig(config: FleetConfig): NodeTokens {
    return new NodeTokens({
      secret: config.nodeSecret,
      previousSecret: config.previousNodeSecret,
      sharedToken: config.nodeToken,
    });
  }

  /** Whether each node has its own token (VM_FLEET_NODE_SECRET is set). */
  get perNode(): boolean {
    return this.settings.secret !== undefined;
  }

  /**
   * What `presented` is for node `nodeId`, or undefined when it is none of that node's tokens
   * (another node's, the secret itself, anything else). Every candidate is compared, each in
   * constant time, so the time taken says nothing of which one came close.
   */
  identify(nodeId: string, presented: string): NodeCredential | undefined {
    let found: NodeCredential | undefined;
    for (const [credential, token] of this.candidates(nodeId)) {
      if (tokensMatch(token, presented) && found === undefined) found = credential;
    }
    return found;
  }

  /**
   * The credential to record for a heartbeat without per-node tokens, which the guard already
   * took: the shared token, or none when the controller is open.
   */
  get sharedCredential(): NodeCredential | null {
    return this.settings.sharedToken === undefined ? null : 'shared';
  }

  /**
   * The token to call node `nodeId`'s agent with: exactly the kind its last heartbeat was taken
   * with (`credential`), the token its agent heartbeats with and its API checks, and never
   * another. So a holder of the shared token or of a node's old token, heartbeating as that
   * node from an address of its own, is sent that same credential again and nothing newer, and
   * an agent that refuses its token (401) is not offered the shared one. With agents open (no
   * token at all) there is nothing to send and nothing to withhold.
   */
  forAgent(nodeId: string, credential: NodeCredential | null): AgentToken {
    const { secret, previousSecret, sharedToken } = this.settings;
    if (secret === undefined && sharedToken === undefined) return { token: undefined };
    switch (credential) {
      case 'own':
        if (secret !== undefined) return { token: deriveNodeToken(secret, nodeId) };
        break;
      case 'previous-secret':
        if (secret !== undefined && previousSecret !== undefined) {
          return { token: deriveNodeToken(previousSecret, nodeId) };
        }
        break;
      case 'shared':
        if (sharedToken !== undefined) return { token: sharedToken };
        break;
      case null:
        // Recorded by a controller without per-node tokens (an older one, or open): without
        // the secret, the shared token is what that controller checked.
        if (secret === undefined) return { token: sharedToken };
        break;
    }
    return {
      unusable: `its last heartbeat was taken with ${describeCredential(credential)}, which this controller does not have (every controller on one store needs the same token settings); it is called again once it heartbeats with one this controller takes`,
    };
  }

  /**
   * The start-up warnings of a migration or rotation under way: what stays open meanwhile and
   * when to end it. Empty outside one.
   */
  transitionWarnings(): string[] {
    const { secret, previousSecret, sharedToken } = this.settings;
    if (secret === undefined) return [];
    const warnings: string[] = [];
    if (sharedToken !== undefined) {
      warnings.push(
        'migrating to per-node tokens: the shared VM_FLEET_NODE_TOKEN is still taken from every node beside its own token, so whoever holds it can still speak for any node (though it is only ever sent the shared token back); unset it once every node heartbeats with its own (the nodes still on it are logged), see docs/securing.md "Per-node tokens"',
      );
    }
    if (previousSecret !== undefined) {
      warnings.push(
        'rotating the node secret: each node\'s token under VM_FLEET_NODE_SECRET_PREVIOUS is still taken, for that node only; unset it once every node has its token under VM_FLEET_NODE_SECRET (the nodes still on the old one are logged), see docs/securing.md "Rotating the node secret"',
      );
    }
    return warnings;
  }

  private candidates(nodeId: string): Array<[NodeCredential, string]> {
    const { secret, previousSecret, sharedToken } = this.settings;
    const candidates: Array<[NodeCredential, string]> = [];
    if (secret !== undefined) candidates.push(['own', deriveNodeToken(secret, nodeId)]);
    if (secret !== undefined && previousSecret !== undefined) {
      candidates.push(['previous-secret', deriveNodeToken(previousSecret, nodeId)]);
    }
    if (sharedToken !== undefined) candidates.push(['shared', sharedToken]);
    return candidates;
  }
}

/** A credential as log lines name it, never its value. */
export function describeCredential(credential: NodeCredential | null): string {
  switch (credential) {
    case 'own':
      return 'its own token under VM_FLEET_NODE_SECRET';
    case 'previous-secret':
      return 'its token under VM_FLEET_NODE_SECRET_PREVIOUS';
    case 'shared':
      return 'the shared VM_FLEET_NODE_TOKEN';
    case null:
      return 'no token';
  }
}
