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
  /** The credential its last heartbeat was taken with (null: none, an open controller). */
  credential: NodeCredential | null;
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
}

/**
 * The nodes now, read at each scrape.
 * A port, bound by the module that owns the nodes (MetricsModule is handed that module), so
 * metrics/ never imports nodes/ while nodes/ counts its events through FleetMetrics.
 */
export abstract class LiveNodesSource {
  abstract read(): Promise<NodesReading>;
}
