import { Logger } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { NodeCredential, NodeTokens } from './node-tokens';
import { NotThisNodesTokenError } from './nodes.errors';

/** Node ids named in the once-per-node note on an old credential; beyond, no more notes. */
const OLD_CREDENTIAL_NOTES = 4096;

/** At most one warning per this for heartbeats refused a node's token; the next counts the rest. */
const REFUSAL_WARNING_EVERY_MS = 60_000;

/**
 * Which credential a heartbeat speaks with for its node, and the log lines about it: refusals
 * (at most one a minute) and old credentials (once per node). Part of NodesService.
 */
export class HeartbeatCredentials {
  /** Nodes already noted as speaking with an old credential (once each per process). */
  private readonly notedOldCredentials = new Set<string>();
  /** When the last refused-token warning was logged, and the refusals not logged since. */
  private lastRefusalWarningAtMs: number | undefined;
  private refusalsNotLogged = 0;

  constructor(
    private readonly nodeTokens: NodeTokens,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /**
   * With per-node tokens, a heartbeat speaks only for its own node_id: NodeRestriction's rule,
   * checked before the store is read or written. (Without, the guard checked the shared token.)
   * Returns the credential it was taken with.
   */
  checkSpeaksForItself(
    nodeId: string,
    token: string | undefined,
    from: string | undefined,
  ): NodeCredential | null {
    if (!this.nodeTokens.perNode) return this.nodeTokens.sharedCredential;
    const credential = token === undefined ? undefined : this.nodeTokens.identify(nodeId, token);
    if (credential === undefined) {
      this.noteRefusal(nodeId, from);
      throw new NotThisNodesTokenError(nodeId);
    }
    if (credential !== 'own') this.noteOldCredential(nodeId, credential);
    else if (this.notedOldCredentials.delete(nodeId)) {
      this.logger.log(`node ${nodeId} now heartbeats with its own token`);
    }
    return credential;
  }

  /**
   * A heartbeat refused its node's token: a node given the wrong token, or someone trying ids.
   * Warned at most once a minute (a prober must not flood the log), naming the node id and the
   * address, never the token; ppn_fleet_heartbeats_total{outcome="refused"} counts every one.
   */
  private noteRefusal(nodeId: string, from: string | undefined): void {
    const now = this.clock.now();
    if (
      this.lastRefusalWarningAtMs !== undefined &&
      now - this.lastRefusalWarningAtMs < REFUSAL_WARNING_EVERY_MS
    ) {
      this.refusalsNotLogged += 1;
      return;
    }
    const earlier =
      this.refusalsNotLogged === 0
        ? ''
        : `; ${this.refusalsNotLogged} more refused since the last such warning, not logged one by one`;
    this.lastRefusalWarningAtMs = now;
    this.refusalsNotLogged = 0;
    this.logger.warn(
      `heartbeat for node ${nodeId} from ${from ?? 'an unknown address'} refused: its bearer token is not one this controller takes for that node (give the node the token \`ppn-fleet node-token ${nodeId}\` prints)${earlier}; at most one such line a minute`,
    );
  }

  /**
   * Once per node and process: which nodes still need their new token before a migration or
   * rotation can end (docs/securing.md).
   */
  private noteOldCredential(nodeId: string, credential: NodeCredential): void {
    if (this.notedOldCredentials.has(nodeId)) return;
    if (this.notedOldCredentials.size >= OLD_CREDENTIAL_NOTES) return;
    this.notedOldCredentials.add(nodeId);
    this.logger.warn(
      credential === 'shared'
        ? `node ${nodeId} heartbeats with the shared VM_FLEET_NODE_TOKEN, taken only while it is set beside VM_FLEET_NODE_SECRET: give the node its own token (ppn-fleet node-token ${nodeId})`
        : `node ${nodeId} heartbeats with its token under VM_FLEET_NODE_SECRET_PREVIOUS: give the node its token under VM_FLEET_NODE_SECRET (ppn-fleet node-token ${nodeId})`,
    );
  }
}
