/**
 * How many nodes are live now: what ppn_fleet_nodes shows at each scrape. A port, bound by
 * the module that owns the nodes (MetricsModule is handed that module), so metrics/ never
 * imports nodes/ while nodes/ counts its events through FleetMetrics.
 */
export abstract class LiveNodeCount {
  abstract count(): Promise<number>;
}
