import { Scrape, registerProcessMetrics, timeSettled } from '@app/daemon';
import type { HeartbeatVerdict } from '@app/fleet-domain';
import type * as Prometheus from 'prom-client';

/** What became of a heartbeat; `refused` is one answered 4xx (invalid, unauthorized, too large). */
export type HeartbeatOutcome = HeartbeatVerdict['kind'] | 'refused';
export type PlacementOutcome = 'placed' | 'refused_unfit' | 'refused_no_room' | 'agent_failed';

interface FleetInstruments {
  registry: Prometheus.Registry;
  heartbeats: Prometheus.Counter<'outcome'>;
  drops: Prometheus.Counter;
  placements: Prometheus.Counter<'outcome'>;
  dispatch: Prometheus.Histogram<'outcome'>;
  dispatchFailures: Prometheus.Counter;
  nodeIdConflicts: Prometheus.Counter;
  sweep: Prometheus.Histogram;
}

/** prom-client, loaded by the metrics module only when metrics are asked for. */
export type PrometheusClient = typeof Prometheus;

/**
 * The controller's Prometheus metrics, in a registry of their own. Services count through it;
 * built without prom-client (metrics off), every call is a no-op that costs nothing.
 */
export class FleetMetrics {
  private readonly instruments?: FleetInstruments;

  constructor(enabled?: { prometheus: PrometheusClient; countLiveNodes: () => Promise<number> }) {
    if (!enabled) return;
    const { prometheus, countLiveNodes } = enabled;
    const registry = new prometheus.Registry();
    const registers = [registry];
    registerProcessMetrics(prometheus, registry);
    // Scrapes at once share one count: however many arrive, the store is read once at a time.
    let counting: Promise<number> | undefined;
    const countShared = (): Promise<number> =>
      (counting ??= countLiveNodes().finally(() => (counting = undefined)));
    new prometheus.Gauge({
      name: 'ppn_fleet_nodes',
      help: 'Nodes heard from in the last 30 s (live), counted at scrape time.',
      registers,
      async collect() {
        // With the store unreachable (its connection logs that): NaN, unknown rather than 0
        // nodes, and the scrape still carries every other metric.
        this.set(await countShared().catch(() => Number.NaN));
      },
    });
    const heartbeats = new prometheus.Counter({
      name: 'ppn_fleet_heartbeats_total',
      help: 'Heartbeats received, by outcome: joined, refreshed, taken_over, out_of_order, refused (answered 4xx).',
      labelNames: ['outcome'] as const,
      registers,
    });
    for (const outcome of ['joined', 'refreshed', 'taken_over', 'out_of_order', 'refused']) {
      heartbeats.inc({ outcome }, 0);
    }
    const placements = new prometheus.Counter({
      name: 'ppn_fleet_placements_total',
      help: 'VM creates, by outcome: placed, refused_unfit (422), refused_no_room (503), agent_failed (502).',
      labelNames: ['outcome'] as const,
      registers,
    });
    for (const outcome of ['placed', 'refused_unfit', 'refused_no_room', 'agent_failed']) {
      placements.inc({ outcome }, 0);
    }
    this.instruments = {
      registry,
      heartbeats,
      placements,
      drops: new prometheus.Counter({
        name: 'ppn_fleet_drops_total',
        help: 'Nodes dropped after 30 s without a heartbeat.',
        registers,
      }),
      dispatch: new prometheus.Histogram({
        name: 'ppn_fleet_dispatch_duration_seconds',
        help: "Time for a node's agent to answer a VM create (POST /v1/spawn), by outcome: ok or failed.",
        labelNames: ['outcome'] as const,
        buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
        registers,
      }),
      dispatchFailures: new prometheus.Counter({
        name: 'ppn_fleet_dispatch_failures_total',
        help: "Dispatches to a node's agent that failed for the node's own reasons (unreachable, no answer in time, 5xx): such a node is passed over for a while, with backoff. The log line names the node.",
        registers,
      }),
      nodeIdConflicts: new prometheus.Counter({
        name: 'ppn_fleet_node_id_conflicts_total',
        help: 'Times one node id was found used by two agents at once (heartbeats of two boots or addresses taking it from each other), counted once per episode. The warning names both.',
        registers,
      }),
      sweep: new prometheus.Histogram({
        name: 'ppn_fleet_sweep_duration_seconds',
        help: 'Time one staleness sweep took (once a second).',
        buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
        registers,
      }),
    };
  }

  get enabled(): boolean {
    return this.instruments !== undefined;
  }

  countHeartbeat(outcome: HeartbeatOutcome): void {
    this.instruments?.heartbeats.inc({ outcome: outcome.replace(/-/g, '_') });
  }

  countPlacement(outcome: PlacementOutcome): void {
    this.instruments?.placements.inc({ outcome });
  }

  /** Times the agent's answer to a create, settled either way; returns the same promise's result. */
  timeDispatch<T>(dispatch: Promise<T>): Promise<T> {
    return timeSettled(this.instruments?.dispatch, dispatch, {
      resolved: 'ok',
      rejected: 'failed',
    });
  }

  countDispatchFailure(): void {
    this.instruments?.dispatchFailures.inc();
  }

  countNodeIdConflict(): void {
    this.instruments?.nodeIdConflicts.inc();
  }

  observeSweep(seconds: number, dropped: number): void {
    this.instruments?.sweep.observe(seconds);
    if (dropped > 0) this.instruments?.drops.inc(dropped);
  }

  async scrape(): Promise<Scrape> {
    if (!this.instruments) throw new Error('metrics are off (VM_FLEET_METRICS_ADDR unset)');
    const { registry } = this.instruments;
    return { contentType: registry.contentType, body: await registry.metrics() };
  }
}
