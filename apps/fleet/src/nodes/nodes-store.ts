import { Clock } from '@app/daemon';
import { FleetConfig } from '../config/fleet.config';
import { KeyClaims } from './key-claims.repository';
import { Leadership } from './leadership';
import { NodeLeases } from './node-leases';
import { NodesRepository } from './nodes.repository';
import { VmMoves } from './vm-moves.repository';
import { NodeDrains } from './node-drains.repository';
import { SharedCopyGrants } from './shared-copy-grants';

/** A store of fleet state, opened: what the controller reads and writes nodes with. */
export interface OpenNodesStore {
  repository: NodesRepository;
  /** Claims on Idempotency-Keys, in the same store, so every controller on it sees them. */
  keyClaims: KeyClaims;
  /** The VMs restored onto another node, in the same store (superseded_vm_ids). */
  vmMoves: VmMoves;
  /** The drained nodes (`node drain`), in the same store: placement passes them over. */
  nodeDrains: NodeDrains;
  /**
   * The clock receive times and staleness are judged by. A store that several controllers
   * share gives one they all agree on (Redis: Redis TIME).
   */
  clock: Clock;
  /**
   * Checks, before the controller serves, that the store answers: a store that must be
   * reached to start (etcd) throws a ConfigurationError naming its variable.
   */
  ready?(): Promise<void>;
  /** etcd: the nodes' fencing leases and VM generations (absent: none, memory and Redis). */
  nodeLeases?: NodeLeases;
  /** etcd: the election among controllers (absent: this controller leads itself). */
  leadership?: Leadership;
  /** etcd: the copy grants the leader issued, for every controller (absent: none shared). */
  copyGrants?: SharedCopyGrants;
  /** Ends its connections and timers; called when the app closes. */
  close(): Promise<void>;
}

/**
 * One kind of store NodesModule can choose: each sits in its own folder beside this file
 * (memory/, redis/, etcd/) and is listed in nodes-store.choice.ts.
 */
export interface NodesStore {
  /** Says what the store is, in start-up errors. */
  name: string;
  /** Whether `config` asks for this store. */
  isChosenBy(config: FleetConfig): boolean;
  open(config: FleetConfig): OpenNodesStore;
}
