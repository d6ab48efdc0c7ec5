import { Scrape, packageVersion, registerProcessMetrics, timeSettled } from '@app/daemon';
import { MAX_EXPORTED_NODES, VmState, compareIds } from '@app/fleet-domain';
import type { HeartbeatVerdict } from '@app/fleet-domain';
import type * as Prometheus from 'prom-client';
import type { LiveNodeReading, NodesReading, VmCopyReading } from './live-nodes.source';

const MIB = 1024 * 1024;

/**
 * The most VMs the per-VM copy series (ppn_fleet_vm_copy_*) show, the first by VM id: bounded as
 * the per-node series are; ppn_fleet_vms_without_copy counts them all.
 */
export const MAX_EXPORTED_VM_COPIES = 5_000;

/** The VMs whose per-VM copy series a scrape shows: the first MAX_EXPORTED_VM_COPIES by VM id. */
export function exportedVmCopies(
  vms: readonly VmCopyReading[],
  max = MAX_EXPORTED_VM_COPIES,
): VmCopyReading[] {
  if (vms.length <= max) return [...vms];
  return [...vms].sort((a, b) => compareIds(a.vm_id, b.vm_id)).slice(0, max);
}

/**
 * The nodes whose per-node series a scrape shows: at most MAX_EXPORTED_NODES, the first by node
 * id. A stable choice: by heartbeat age it would change at every beat, and series would come and
 * go (a node looking dropped at each scrape that left it out).
 */
export function exportedNodes(
  nodes: readonly LiveNodeReading[],
  max = MAX_EXPORTED_NODES,
): LiveNodeReading[] {
  if (nodes.length <= max) return [...nodes];
  return [...nodes].sort((a, b) => compareIds(a.node_id, b.node_id)).slice(0, max);
}

/** What became of a heartbeat; `refused` is one answered 4xx (invalid, unauthorized, too large). */
export type HeartbeatOutcome = HeartbeatVerdict['kind'] | 'refused';
/** Each outcome's labels, made once (one heartbeat counted per request). */
const HEARTBEAT_OUTCOME_LABELS: Record<HeartbeatOutcome, { outcome: string }> = {
  joined: { outcome: 'joined' },
  refreshed: { outcome: 'refreshed' },
  'taken-over': { outcome: 'taken_over' },
  'out-of-order': { outcome: 'out_of_order' },
  refused: { outcome: 'refused' },
};
export type PlacementOutcome = 'placed' | 'refused_unfit' | 'refused_no_room' | 'agent_failed';

interface FleetInstruments {
  registry: Prometheus.Registry;
  heartbeats: Prometheus.Counter<'outcome'>;
  drops: Prometheus.Counter;
  placements: Prometheus.Counter<'outcome'>;
  dispatch: Prometheus.Histogram<'outcome'>;
  dispatchFailures: Prometheus.Counter;
  nodeIdConflicts: Prometheus.Counter;
  vmIdConflicts: Prometheus.Counter;
  sweep: Prometheus.Histogram;
  leader: Prometheus.Gauge;
  recoveries: Prometheus.Counter<'outcome'>;
}

/** prom-client, loaded by the metrics module only when metrics are asked for. */
export type PrometheusClient = typeof Prometheus;

/**
 * The controller's Prometheus metrics, in a registry of their own. Services count through it;
 * built without prom-client (metrics off), every call is a no-op that costs nothing.
 */
export class FleetMetrics {
  private readonly instruments?: FleetInstruments;

  constructor(enabled?: {
    prometheus: PrometheusClient;
    /** The nodes as they are now, read at scrape time. */
    readNodes: () => Promise<NodesReading>;
    /** What ppn_fleet_build_info shows; by default the version of the package.json above. */
    version?: string;
  }) {
    if (!enabled) return;
    const { prometheus, readNodes, version = packageVersion() } = enabled;
    const registry = new prometheus.Registry();
    const registers = [registry];
    registerProcessMetrics(prometheus, registry);
    new prometheus.Gauge({
      name: 'ppn_fleet_build_info',
      help: 'Always 1; its label is the version of the controller running.',
      labelNames: ['version'] as const,
      registers,
    }).set({ version }, 1);
    // Every gauge of a scrape, and scrapes at once, share one read: however many arrive, the
    // store is read once at a time. Unreadable (its connection logs that): undefined.
    let reading: Promise<NodesReading | undefined> | undefined;
    const readShared = (): Promise<NodesReading | undefined> =>
      (reading ??= readNodes()
        .catch(() => undefined)
        .finally(() => (reading = undefined)));
    const readLive = async (): Promise<LiveNodeReading[] | undefined> => (await readShared())?.live;
    new prometheus.Gauge({
      name: 'ppn_fleet_nodes',
      help: 'Nodes heard from in the last 30 s (live), counted at scrape time.',
      registers,
      async collect() {
        // With the store unreachable: NaN, unknown rather than 0 nodes, and the scrape still
        // carries every other metric.
        this.set((await readLive())?.length ?? Number.NaN);
      },
    });
    new prometheus.Gauge({
      name: 'ppn_fleet_nodes_by_credential',
      help: 'Live nodes by the credential their last heartbeat was taken with: own (per-node token), previous_secret (their token under VM_FLEET_NODE_SECRET_PREVIOUS), shared (VM_FLEET_NODE_TOKEN), none (no token: an open controller). A migration or rotation can end once shared and previous_secret are 0.',
      labelNames: ['credential'] as const,
      registers,
      async collect() {
        const nodes = await readLive();
        this.reset();
        if (!nodes) return;
        const counts: Record<string, number> = { own: 0, previous_secret: 0, shared: 0, none: 0 };
        for (const node of nodes) {
          counts[node.credential?.replace(/-/g, '_') ?? 'none'] += 1;
        }
        for (const [credential, count] of Object.entries(counts)) this.set({ credential }, count);
      },
    });
    new prometheus.Gauge({
      name: 'ppn_fleet_silent_node_vms',
      help: 'VMs listed in GET /v1/vms with node_silent_since, counted at scrape time: on nodes that dropped out (their agent stopped or cut off), or listed by an earlier agent of a node id that another agent now speaks for. They may still run, and no agent can stop them.',
      registers,
      async collect() {
        // With the store unreachable: NaN, unknown rather than none.
        this.set((await readShared())?.silentNodeVms ?? Number.NaN);
      },
    });
    // The nodes each per-node gauge shows, chosen once per reading (gauges of one scrape share it).
    const chosen = new WeakMap<LiveNodeReading[], LiveNodeReading[]>();
    const readExported = async (): Promise<LiveNodeReading[] | undefined> => {
      const nodes = await readLive();
      if (nodes === undefined) return undefined;
      let exported = chosen.get(nodes);
      if (exported === undefined) chosen.set(nodes, (exported = exportedNodes(nodes)));
      return exported;
    };
    new prometheus.Gauge({
      name: 'ppn_fleet_nodes_not_exported',
      help: `Live nodes left out of the per-node series (ppn_fleet_node_*), which show at most ${MAX_EXPORTED_NODES} nodes, the first by node id. NaN while the store cannot be read.`,
      registers,
      async collect() {
        const nodes = await readLive();
        this.set(nodes === undefined ? Number.NaN : Math.max(0, nodes.length - MAX_EXPORTED_NODES));
      },
    });
    // One series per live node (node ids are bounded by the heartbeat's validation, their
    // number by MAX_EXPORTED_NODES), set afresh at each scrape: a dropped node's series go with
    // it. The store unreadable: none at all.
    const perNode = <L extends string>(
      name: string,
      help: string,
      labelNames: readonly L[],
      set: (gauge: Prometheus.Gauge<L>, node: LiveNodeReading) => void,
    ): void => {
      new prometheus.Gauge<L>({
        name,
        help,
        labelNames,
        registers,
        async collect() {
          const nodes = await readExported();
          this.reset();
          for (const node of nodes ?? []) set(this, node);
        },
      });
    };
    perNode(
      'ppn_fleet_node_ram_available_bytes',
      "RAM placement may still use on each live node: its last heartbeat's total less used, less what the controller holds for VMs being placed there.",
      ['node_id'],
      (gauge, node) => gauge.set({ node_id: node.node_id }, node.ram_available_mb * MIB),
    );
    perNode(
      'ppn_fleet_node_ram_total_bytes',
      "Each live node's RAM: ram_total_mb of its last heartbeat, in bytes.",
      ['node_id'],
      (gauge, node) => gauge.set({ node_id: node.node_id }, node.ram_total_mb * MIB),
    );
    perNode(
      'ppn_fleet_node_vms',
      "Each live node's VMs by state (Running, Stopped, Provisioning, Error), as its last heartbeat listed them.",
      ['node_id', 'state'],
      (gauge, node) => {
        for (const state of Object.values<string>(VmState)) {
          const count = node.vm_states.filter((each) => each === state).length;
          gauge.set({ node_id: node.node_id, state }, count);
        }
      },
    );
    perNode(
      'ppn_fleet_node_heartbeat_age_seconds',
      "Time since each live node's last heartbeat arrived; a node is dropped past 30 s.",
      ['node_id'],
      (gauge, node) => gauge.set({ node_id: node.node_id }, node.heartbeat_age_ms / 1000),
    );
    perNode(
      'ppn_fleet_node_reserved',
      'Whether each live node is reserved (1: placed on only when no other node fits) or not (0).',
      ['node_id'],
      (gauge, node) => gauge.set({ node_id: node.node_id }, node.reserved ? 1 : 0),
    );
    perNode(
      'ppn_fleet_node_fenced_vms',
      'etcd mode: per live node, the protected VMs its last heartbeat said it fenced (fenced_vm_ids: its lease ran out, their QEMU ended, held until a renewal); 0 otherwise.',
      ['node_id'],
      (gauge, node) => gauge.set({ node_id: node.node_id }, node.fenced_vms),
    );
    // Copies: one series per VM that wants copies or has one (node_id: the VM's node), from the
    // same read; the store unreadable: none, and the count NaN.
    const perVmCopy = (
      name: string,
      help: string,
      value: (vm: VmCopyReading) => number | null,
    ): void => {
      new prometheus.Gauge<'vm_id' | 'node_id'>({
        name,
        help,
        labelNames: ['vm_id', 'node_id'],
        registers,
        async collect() {
          const vms = (await readShared())?.vmCopies ?? [];
          this.reset();
          for (const vm of exportedVmCopies(vms)) {
            const shown = value(vm);
            if (shown !== null) this.set({ vm_id: vm.vm_id, node_id: vm.node_id }, shown);
          }
        },
      });
    };
    perVmCopy(
      'ppn_fleet_vm_copy_age_seconds',
      "Age of each VM's freshest copy on another live node (its copied_at in GET /v1/vms), by the VM and its node; no series while it has none.",
      (vm) => (vm.copy_age_ms === null ? null : vm.copy_age_ms / 1000),
    );
    perVmCopy(
      'ppn_fleet_vm_copy_interval_seconds',
      "The copy interval (copies.every_s) of each Running VM that wants copies (count 1 or 2), as its agent reports it. PpnFleetVmCopyStale compares the copy's age with three of it.",
      (vm) => vm.every_s,
    );
    perVmCopy(
      'ppn_fleet_vm_uncopied_seconds',
      'Time since each Running VM that wants copies and has none on another live node was started; no series once it has one.',
      (vm) => (vm.uncopied_ms === null ? null : vm.uncopied_ms / 1000),
    );
    new prometheus.Gauge({
      name: 'ppn_fleet_vms_without_copy',
      help: 'Listed VMs whose copy policy wants copies (count 1 or 2) and that have none on another live node (copied_at null), counted at scrape time; NaN while the store cannot be read.',
      registers,
      async collect() {
        const vms = (await readShared())?.vmCopies;
        this.set(
          vms === undefined
            ? Number.NaN
            : vms.filter((vm) => vm.wanted && vm.copy_age_ms === null).length,
        );
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
    const dispatch = new prometheus.Histogram({
      name: 'ppn_fleet_dispatch_duration_seconds',
      help: "Time for a node's agent to answer a VM create (POST /v1/spawn), by outcome: ok or failed.",
      labelNames: ['outcome'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    // Exported at 0 from the start, so the first dispatch is a rise a rate() can see.
    for (const outcome of ['ok', 'failed']) dispatch.zero({ outcome });
    this.instruments = {
      registry,
      heartbeats,
      placements,
      dispatch,
      drops: new prometheus.Counter({
        name: 'ppn_fleet_drops_total',
        help: 'Nodes dropped after 30 s without a heartbeat.',
        registers,
      }),
      dispatchFailures: new prometheus.Counter({
        name: 'ppn_fleet_dispatch_failures_total',
        help: "Dispatches to a node's agent that failed for the node's own reasons (unreachable, no answer in time, 5xx, 401): such a node is passed over for a while, with backoff. The log line names the node.",
        registers,
      }),
      nodeIdConflicts: new prometheus.Counter({
        name: 'ppn_fleet_node_id_conflicts_total',
        help: 'Times one node id was found used by two agents at once (heartbeats of two boots or addresses taking it from each other), counted once per episode. The warning names both.',
        registers,
      }),
      vmIdConflicts: new prometheus.Counter({
        name: 'ppn_fleet_vm_id_conflicts_total',
        help: "Times a node's heartbeat listed a VM id another node holds (ignored for that heartbeat: not listed twice, not routed), counted once per episode. The warning names both nodes.",
        registers,
      }),
      sweep: new prometheus.Histogram({
        name: 'ppn_fleet_sweep_duration_seconds',
        help: 'Time one staleness sweep took (once a second).',
        buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
        registers,
      }),
      ...leadershipInstruments(prometheus, registers),
    };
  }

  get enabled(): boolean {
    return this.instruments !== undefined;
  }

  countHeartbeat(outcome: HeartbeatOutcome): void {
    this.instruments?.heartbeats.inc(HEARTBEAT_OUTCOME_LABELS[outcome]);
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

  countVmIdConflict(): void {
    this.instruments?.vmIdConflicts.inc();
  }

  /** 1 while this controller leads (etcd mode; always 1 in memory and Redis mode). */
  setLeader(leading: boolean): void {
    this.instruments?.leader.set(leading ? 1 : 0);
  }

  countRecovery(outcome: 'recovered' | 'failed'): void {
    this.instruments?.recoveries.inc({ outcome });
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

/** Leadership and recovery (etcd mode, issue 36). */
function leadershipInstruments(
  prometheus: PrometheusClient,
  registers: Prometheus.Registry[],
): Pick<FleetInstruments, 'leader' | 'recoveries'> {
  const leader = new prometheus.Gauge({
    name: 'ppn_fleet_leader',
    help: 'Whether this controller is the leader that runs the staleness sweep and recoveries (1) or not (0); in memory and Redis mode always 1.',
    registers,
  });
  leader.set(1);
  const recoveries = new prometheus.Counter({
    name: 'ppn_fleet_vm_recoveries_total',
    help: "Protected VMs of a node whose lease lapsed, restored from a copy on another node by the leader (recovered), or whose restore failed and is tried again (failed). The log line names the node, the VM and the copy's age.",
    labelNames: ['outcome'] as const,
    registers,
  });
  for (const outcome of ['recovered', 'failed']) recoveries.inc({ outcome }, 0);
  return { leader, recoveries };
}
