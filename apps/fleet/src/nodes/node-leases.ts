/** A node whose lease lapsed long enough ago (or that an operator declared dead). */
export interface LapsedNode {
  nodeId: string;
  /** Its last renewal (a controller's wall clock, ms); undefined when declared dead without one. */
  renewedAtWallMs?: number;
  /** Already marked for recovery (by a leader before, or by `node declare-dead`). */
  recovering: boolean;
}

/** What a declare-dead found: marked, its lease still live, or no lease ever known for it. */
export type DeclareDeadOutcome =
  | { kind: 'declared'; renewedAtWallMs?: number }
  | { kind: 'lease-live'; renewedAtWallMs?: number; leftS: number }
  | { kind: 'unknown' };

/**
 * The nodes' fencing leases and the VMs' generations (issue 36), in the store every controller
 * shares: etcd only, where a lease not renewed ends for everyone at once. Memory and Redis
 * keep none (NO_NODE_LEASES): no fence_after_s is answered, nothing is recovered.
 */
export abstract class NodeLeases {
  /** Whether leases are kept at all (etcd mode). */
  abstract readonly enabled: boolean;

  /**
   * Grants or keeps alive the node's lease (TTL fence_after_s) and stores `wallMs` as its last
   * renewal: fence_after_s once renewed, undefined when not (etcd unreachable, or the node is
   * being recovered): its agent's clock then keeps running toward fencing.
   */
  abstract renew(nodeId: string, wallMs: number): Promise<number | undefined>;

  /** Nodes marked for recovery, and those whose lease is gone and last renewed before `beforeWallMs`. */
  abstract lapsed(beforeWallMs: number): Promise<LapsedNode[]>;

  /** Marks the node for recovery if its lease is gone (in one step): false if it is live again. */
  abstract beginRecovery(nodeId: string): Promise<boolean>;

  /** The node's protected VMs are recovered: its marker and last renewal are forgotten. */
  abstract endRecovery(nodeId: string): Promise<void>;

  /** `ppn-fleet node declare-dead`: marks the node for recovery unless its lease is live. */
  abstract declareDead(nodeId: string): Promise<DeclareDeadOutcome>;

  /** Raises the VM's generation (a recovery made it anew elsewhere): the new one. */
  abstract raiseGeneration(vmId: string): Promise<number>;

  /** Of `vmIds`, those with a generation (raised at least once), each with it. */
  abstract generationsOf(vmIds: readonly string[]): Promise<Map<string, number>>;
}

/** Memory and Redis mode: no leases, no fencing, no recovery. */
export class NoNodeLeases extends NodeLeases {
  readonly enabled = false;
  renew(): Promise<number | undefined> {
    return Promise.resolve(undefined);
  }
  lapsed(): Promise<LapsedNode[]> {
    return Promise.resolve([]);
  }
  beginRecovery(): Promise<boolean> {
    return Promise.resolve(false);
  }
  endRecovery(): Promise<void> {
    return Promise.resolve();
  }
  declareDead(): Promise<DeclareDeadOutcome> {
    return Promise.resolve({ kind: 'unknown' });
  }
  raiseGeneration(): Promise<number> {
    return Promise.reject(new Error('VM generations are kept in etcd mode only'));
  }
  generationsOf(): Promise<Map<string, number>> {
    return Promise.resolve(new Map<string, number>());
  }
}
