import { Scrape, packageVersion, registerProcessMetrics, timeSettled } from '@app/daemon';
import { VmState } from '@app/fleet-domain';
import type * as Prometheus from 'prom-client';

const MIB = 1024 * 1024;

interface HostInstruments {
  registry: Prometheus.Registry;
  heartbeatFailures: Prometheus.Counter;
  heartbeatsIgnored: Prometheus.Counter;
  spawn: Prometheus.Histogram<'outcome'>;
  restarts: Prometheus.Counter<'reason'>;
  startFailures: Prometheus.Counter;
  diskFullPauses: Prometheus.Counter;
  ramCommitted: Prometheus.Gauge;
  ramTotal: Prometheus.Gauge;
  copyBytesSent: Prometheus.Counter<'vm_id'>;
  copyFailures: Prometheus.Counter<'vm_id'>;
  copyLastTime: Prometheus.Gauge<'vm_id'>;
  fencedVms: Prometheus.Gauge;
  unconfirmedMoves: Prometheus.Gauge;
  meshPorts: Prometheus.Gauge<'state'>;
  fences: Prometheus.Counter;
}

/** prom-client, loaded by the metrics module only when metrics are asked for. */
export type PrometheusClient = typeof Prometheus;

/**
 * The agent's Prometheus metrics, in a registry of their own. Services count through it;
 * built without prom-client (metrics off), every call is a no-op that costs nothing.
 */
export class HostMetrics {
  private readonly instruments?: HostInstruments;

  constructor(enabled?: {
    prometheus: PrometheusClient;
    /** The VMs' states as the heartbeat reports them, read at scrape time. */
    listVmStates: () => Promise<string[]>;
    /** How many VMs are in a crash loop now, read at scrape time. */
    countCrashLooping?: () => Promise<number>;
    /** How many VMs are paused on a full disk now, read at scrape time. */
    countPausedOnFullDisk?: () => Promise<number>;
    /** What ppn_host_build_info shows; by default the version of the package.json above. */
    version?: string;
  }) {
    if (!enabled) return;
    const {
      prometheus,
      listVmStates,
      countCrashLooping = () => Promise.resolve(0),
      countPausedOnFullDisk = () => Promise.resolve(0),
      version = packageVersion(),
    } = enabled;
    const registry = new prometheus.Registry();
    const registers = [registry];
    registerProcessMetrics(prometheus, registry);
    new prometheus.Gauge({
      name: 'ppn_host_build_info',
      help: 'Always 1; its label is the version of the agent running.',
      labelNames: ['version'] as const,
      registers,
    }).set({ version }, 1);
    new prometheus.Gauge({
      name: 'ppn_host_vms',
      help: "This node's VMs by state (Running, Stopped, Provisioning, Error), counted at scrape time.",
      labelNames: ['state'] as const,
      registers,
      async collect() {
        // Unreadable VM files: NaN, unknown rather than none, and the scrape goes on.
        const states = await listVmStates().catch(() => undefined);
        for (const state of Object.values<string>(VmState)) {
          this.set({ state }, states ? states.filter((each) => each === state).length : Number.NaN);
        }
      },
    });
    new prometheus.Gauge({
      name: 'ppn_host_vms_crash_looping',
      help: 'VMs that should run and failed 3 or more times in a row (crashes or failed starts) without running steadily (10 min) since, whatever their state now; counted at scrape time.',
      registers,
      async collect() {
        this.set(await countCrashLooping().catch(() => Number.NaN));
      },
    });
    new prometheus.Gauge({
      name: 'ppn_host_vms_paused_disk_full',
      help: 'VMs their hypervisor paused on a failed write because VM_DISK_DIR is full (listed Error, resumed by the agent once there is room), as last inspected; counted at scrape time.',
      registers,
      async collect() {
        this.set(await countPausedOnFullDisk().catch(() => Number.NaN));
      },
    });
    this.instruments = {
      registry,
      diskFullPauses: new prometheus.Counter({
        name: 'ppn_host_vm_disk_full_pauses_total',
        help: 'Times the agent found a VM paused by its hypervisor on a failed write (VM_DISK_DIR full).',
        registers,
      }),
      restarts: new prometheus.Counter({
        name: 'ppn_host_vm_restarts_total',
        help: "VMs the agent started again without an operator asking, by reason: crashed (its process ended while it should run), agent_start (not running when the agent started: a reboot, a power cut) or unfenced (ended by self-fencing, started once the node's lease was renewed again).",
        labelNames: ['reason'] as const,
        registers,
      }),
      startFailures: new prometheus.Counter({
        name: 'ppn_host_vm_start_failures_total',
        help: 'Starts of existing VMs that failed or were refused (no room); each is tried again after the restart backoff.',
        registers,
      }),
      heartbeatFailures: new prometheus.Counter({
        name: 'ppn_host_heartbeat_failures_total',
        help: 'Heartbeats the controller did not accept (unreachable, timed out or not 200).',
        registers,
      }),
      heartbeatsIgnored: new prometheus.Counter({
        name: 'ppn_host_heartbeats_ignored_total',
        help: "Heartbeats the controller answered 200 but ignored (accepted false): it holds a later stamp of this boot, as after this machine's clock went back. The warning says which.",
        registers,
      }),
      spawn: new prometheus.Histogram({
        name: 'ppn_host_spawn_duration_seconds',
        help: 'Time from a VM accepted to its hypervisor process started, by outcome: started or failed.',
        labelNames: ['outcome'] as const,
        buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
        registers,
      }),
      copyBytesSent: new prometheus.Counter({
        name: 'ppn_host_vm_copy_sent_bytes_total',
        help: "Bytes of this node's VMs' copies sent to peer nodes, by VM.",
        labelNames: ['vm_id'] as const,
        registers,
      }),
      copyFailures: new prometheus.Counter({
        name: 'ppn_host_vm_copy_failures_total',
        help: "Copies of this node's VMs to a peer node that failed (tried again at the next interval), by VM.",
        labelNames: ['vm_id'] as const,
        registers,
      }),
      copyLastTime: new prometheus.Gauge({
        name: 'ppn_host_vm_copy_last_time_seconds',
        help: "When the VM's last copy to a peer node was taken (its point in time), Unix seconds.",
        labelNames: ['vm_id'] as const,
        registers,
      }),
      // Named as the fencing design (issue 36) agreed with the controller's side.
      fencedVms: new prometheus.Gauge({
        name: 'ppn_vm_host_fenced_vms',
        help: "Protected VMs this agent holds fenced now: ended (or not started) because its node's lease was not renewed in time (etcd mode); started again once it is.",
        registers,
      }),
      unconfirmedMoves: new prometheus.Gauge({
        name: 'ppn_vm_host_moves_unconfirmed',
        help: 'VMs this agent keeps paused after a live move whose migration completed while the new node never said whether it took the guest over; that node is asked on until it answers.',
        registers,
      }),
      meshPorts: new prometheus.Gauge({
        name: 'ppn_vm_host_mesh_ports',
        help: "Published TCP ports of other nodes' VMs the routing mesh forwards from this node (state listening), and those it cannot listen on (state failed: another process holds the port).",
        labelNames: ['state'] as const,
        registers,
      }),
      fences: new prometheus.Counter({
        name: 'ppn_vm_host_fences_total',
        help: "Protected VMs this agent ended hard because its node's lease was not renewed in time (etcd mode).",
        registers,
      }),
      // In bytes, Prometheus' base unit (promtool refuses `_mb`); the heartbeat's MB are MiB.
      ramCommitted: new prometheus.Gauge({
        name: 'ppn_host_ram_committed_bytes',
        help: 'RAM in use on this node: ram_used_mb of the last heartbeat, in bytes.',
        registers,
      }),
      ramTotal: new prometheus.Gauge({
        name: 'ppn_host_ram_total_bytes',
        help: "This node's RAM: ram_total_mb of the last heartbeat, in bytes.",
        registers,
      }),
    };
  }

  get enabled(): boolean {
    return this.instruments !== undefined;
  }

  countHeartbeatFailure(): void {
    this.instruments?.heartbeatFailures.inc();
  }

  countHeartbeatIgnored(): void {
    this.instruments?.heartbeatsIgnored.inc();
  }

  /** A VM started again without an operator asking. */
  countRestart(reason: 'crashed' | 'agent_start' | 'unfenced'): void {
    this.instruments?.restarts.inc({ reason });
  }

  /** A VM found paused on a full disk (once per pause). */
  countDiskFullPause(): void {
    this.instruments?.diskFullPauses.inc();
  }

  /** A protected VM ended because the node's lease ran out. */
  countFence(): void {
    this.instruments?.fences.inc();
  }

  /** How many VMs are fenced now. */
  observeFenced(count: number): void {
    this.instruments?.fencedVms.set(count);
  }

  /** How many guests are kept paused by an unconfirmed move now. */
  observeUnconfirmedMoves(count: number): void {
    this.instruments?.unconfirmedMoves.set(count);
  }

  /** The routing mesh's ports: listening, and those it could not bind. */
  observeMeshPorts(listening: number, failed: number): void {
    this.instruments?.meshPorts.set({ state: 'listening' }, listening);
    this.instruments?.meshPorts.set({ state: 'failed' }, failed);
  }

  countStartFailure(): void {
    this.instruments?.startFailures.inc();
  }

  /** Bytes of a VM's copy sent to a peer. */
  countCopyBytes(vmId: string, bytes: number): void {
    this.instruments?.copyBytesSent.inc({ vm_id: vmId }, bytes);
  }

  countCopyFailure(vmId: string): void {
    this.instruments?.copyFailures.inc({ vm_id: vmId });
  }

  /** A VM's copy taken into a peer's chain, as of `takenAtMs` (wall clock). */
  observeCopy(vmId: string, takenAtMs: number): void {
    this.instruments?.copyLastTime.set({ vm_id: vmId }, takenAtMs / 1000);
  }

  /** What the last heartbeat reported of this node's RAM. */
  observeRam(report: { ram_used_mb: number; ram_total_mb: number }): void {
    this.instruments?.ramCommitted.set(report.ram_used_mb * MIB);
    this.instruments?.ramTotal.set(report.ram_total_mb * MIB);
  }

  /** Times a VM's start, settled either way; returns the same promise's result. */
  timeSpawn<T>(spawn: Promise<T>): Promise<T> {
    return timeSettled(this.instruments?.spawn, spawn, { resolved: 'started', rejected: 'failed' });
  }

  async scrape(): Promise<Scrape> {
    if (!this.instruments) throw new Error('metrics are off (VM_METRICS_ADDR unset)');
    const { registry } = this.instruments;
    return { contentType: registry.contentType, body: await registry.metrics() };
  }
}
