import { deriveNodeToken, tokensMatch } from '@app/daemon';
import { FleetConfig } from '../config/fleet.config';

/**
 * Which of the tokens the controller takes for a node a request carried: the node's own under
 * VM_FLEET_NODE_SECRET, its own under VM_FLEET_NODE_SECRET_PREVIOUS (a rotation under way), or
 * the shared VM_FLEET_NODE_TOKEN (a migration to per-node tokens under way).
 */
export type NodeCredential = 'own' | 'previous-secret' | 'shared';

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
   * The tokens to call node `nodeId`'s agent with, in the order to try them (the next only
   * when the agent refused the last with 401): its own, then its own under the previous
   * secret, then the shared token. Empty when agents are open.
   */
  forAgent(nodeId: string): string[] {
    return this.candidates(nodeId).map(([, token]) => token);
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
        'migrating to per-node tokens: the shared VM_FLEET_NODE_TOKEN is still taken from every node beside its own token, so whoever holds it can still speak for any node; unset it once every node heartbeats with its own (the nodes still on it are logged), see README "Securing a fleet"',
      );
    }
    if (previousSecret !== undefined) {
      warnings.push(
        'rotating the node secret: each node\'s token under VM_FLEET_NODE_SECRET_PREVIOUS is still taken, for that node only; unset it once every node has its token under VM_FLEET_NODE_SECRET (the nodes still on the old one are logged), see README "Securing a fleet"',
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
