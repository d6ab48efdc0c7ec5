import type { NodeCredential } from '@app/fleet-domain';

/** What the per-node gauges show of one live node, read at scrape time. */
export interface LiveNodeReading {
  node_id: string;
  /** What placement may still use: total less used less the RAM held for VMs being placed. */
  ram_available_mb: number;
  ram_total_mb: number;
  /** Each VM's state as the node's last heartbeat listed it. */
  vm_states: string[];
  /** Time since its last heartbeat arrived, on the controller's clock. */
  heartbeat_age_ms: number;
  reserved: boolean;
  /** The protected VMs its last heartbeat said it fenced (etcd mode: its lease ran out). */
  fenced_vms: number;
  /** The credential its last heartbeat was taken with (null: none, an open controller). */
  credential: NodeCredential | null;
}

/** What the copy gauges show of one listed VM that wants copies or has one. */
export interface VmCopyReading {
  vm_id: string;
  /** The VM's node (where it runs, or last ran: a silent node's VMs are read too). */
  node_id: string;
  /** Its policy's interval while it is Running and wants copies (count >= 1); else null. */
  every_s: number | null;
  /** Wants copies (count >= 1), whatever its state. */
  wanted: boolean;
  /** Age of its freshest copy on another live node (wall clock); null when it has none. */
  copy_age_ms: number | null;
  /** Running, wanting copies and having none: time since it started; else null. */
  uncopied_ms: number | null;
}

/** One scrape's view of the store, from one read. */
export interface NodesReading {
  /** The live nodes: what ppn_fleet_nodes and the ppn_fleet_node_* gauges show. */
  live: LiveNodeReading[];
  /**
   * VMs GET /v1/vms lists that no live agent manages (node_silent_since): those of nodes that
   * dropped out, and those an earlier agent of a node id listed. What ppn_fleet_silent_node_vms
   * shows.
   */
  silentNodeVms: number;
  /** The listed VMs that want copies or have one: what the ppn_fleet_vm_copy_* gauges show. */
  vmCopies: VmCopyReading[];
}

/**
 * The nodes now, read at each scrape.
 * A port, bound by the module that owns the nodes (MetricsModule is handed that module), so
 * metrics/ never imports nodes/ while nodes/ counts its events through FleetMetrics.
 */
export abstract class LiveNodesSource {
  abstract read(): Promise<NodesReading>;
}
