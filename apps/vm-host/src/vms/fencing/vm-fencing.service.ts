import { Inject, Injectable, Logger } from '@nestjs/common';
import { Clock } from '@app/daemon';
import {
  DEFAULT_FENCE_AFTER_S,
  DesiredVmState,
  MAX_FENCED_VMS_REPORTED,
  toRfc3339,
} from '@app/fleet-domain';
import { VmHostConfig } from '../../config/vm-host.config';
import { HostMetrics } from '../../metrics/host-metrics.service';
import { VmDriver } from '../vm-driver';
import { VmFiles } from '../files/vm-files';
import { VmSidecar } from '../files/vm-sidecar';
import { VmSidecars } from '../files/vm-sidecars';
import { VmLifeCycles } from '../life-cycle/vm-life-cycles';
import { messageOf } from '../vms.errors';
import { FencedVms } from './fenced-vms.hook';
import { LeaseFile } from './lease-file';

/**
 * DI token of the clock the lease is measured on: a monotonic one (`MonotonicClock`), so a wall
 * clock stepped back (NTP, `date -s`) never lets a protected VM outlive its lease, nor one
 * stepped forward fence every VM at once. Tests give their own.
 */
export const LEASE_CLOCK = Symbol('LEASE_CLOCK');

/** What a heartbeat's answer says of the lease and of VMs restored elsewhere. */
export interface LeaseAnswer {
  fence_after_s?: number;
  copies_default?: number;
  superseded_vm_ids?: string[];
}

/**
 * A VM whose copies another node may be started from, as the controller's recovery judges it:
 * its policy keeps at least one copy, or it names none and the controller's default
 * (`copies_default`, sent beside fence_after_s) does. Unknown default (a controller before
 * the field): a VM without a policy counts as protected: fencing one more VM costs an outage
 * while the lease is out, running one twice costs its data.
 */
export function isProtected(sidecar: VmSidecar, copiesDefault?: number): boolean {
  return (sidecar.copies?.count ?? copiesDefault ?? 1) >= 1;
}

/**
 * Self-fencing (etcd mode; issue 36's shared design). Once a heartbeat's answer carried
 * `fence_after_s`, the controller holds this node's lease in etcd, renewed by each heartbeat
 * it answers so: the node may run its protected VMs until `fence_after_s` after it SENT the
 * last renewing heartbeat, on the agent's clock. Past that, the watchdog (each second,
 * `VmFencingJob`) ends each protected VM hard through the driver, its disk and desired state
 * kept, and holds it in the life cycle's `fenced` phase; the next renewing answer that does not
 * supersede it unfences it and reconciliation starts it again. Answers without the field
 * (memory or Redis mode) change nothing; once on, fencing stays on (remembered in the state
 * folder, `LeaseFile`), so a restarted agent holds its protected VMs until a renewal.
 */
@Injectable()
export class VmFencing {
  private readonly logger = new Logger('Fencing');
  private readonly lease: LeaseFile;
  /** The last renewing answer's fence_after_s, in ms; null while fencing is off. */
  private fenceAfterMs: number | null = null;
  /** When (`now()`) the heartbeat that last renewed the lease was sent; null: unknown. */
  private renewedAtMs: number | null = null;
  /** Protected VMs may run until then (`now()`). */
  private deadlineMs = Number.NEGATIVE_INFINITY;
  /** The controller's default copy count (copies_default); undefined while unknown. */
  private copiesDefault: number | undefined;
  private leaseWriteFailed = false;

  constructor(
    private readonly config: VmHostConfig,
    private readonly files: VmFiles,
    private readonly sidecars: VmSidecars,
    private readonly lifecycle: VmLifeCycles,
    private readonly driver: VmDriver,
    @Inject(LEASE_CLOCK) private readonly clock: Clock,
    private readonly fenced: FencedVms,
    private readonly metrics: HostMetrics,
    /** The agent's clock, which the restart policy's times are on. */
    private readonly agentClock: Clock,
  ) {
    this.lease = new LeaseFile(files.root);
  }

  /** Now on the lease's clock: what a heartbeat's send time is read on. */
  now(): number {
    return this.clock.now();
  }

  /** True once an answer (or the remembered lease) turned fencing on. */
  get on(): boolean {
    return this.fenceAfterMs !== null;
  }

  /** The fenced VMs' ids, for the heartbeat's `fenced_vm_ids`. */
  fencedVmIds(): string[] {
    return this.fenced.ids().slice(0, MAX_FENCED_VMS_REPORTED);
  }

  /**
   * At start-up, before reconciliation starts any VM: with a remembered lease, the protected
   * VMs that do not run are held (not started before a heartbeat renews the lease), and those
   * that run are ended at once when the remembered lease has run out.
   */
  async prepare(): Promise<void> {
    const remembered = await this.lease.read();
    if (remembered === undefined) return;
    if (remembered === 'unreadable') {
      this.logger.error(
        `node ${this.config.nodeId}: ${this.files.root}/fencing.json cannot be read; fencing stays on, every protected VM held until a heartbeat renews the lease`,
      );
      this.fenceAfterMs = DEFAULT_FENCE_AFTER_S * 1000;
    } else {
      this.fenceAfterMs = remembered.fence_after_s * 1000;
      this.copiesDefault = remembered.copies_default;
      // On this agent's clock: how long ago, by the wall clock, the last renewal was sent.
      this.renewedAtMs = this.clock.now() - (this.clock.wallNow() - remembered.renewed_at_ms);
      this.deadlineMs = this.renewedAtMs + this.fenceAfterMs;
    }
    const sidecars = (await this.sidecars.all()).filter((sidecar) => this.protects(sidecar));
    const live = await this.driver.find(sidecars.map(({ vm_id }) => vm_id));
    for (const sidecar of sidecars) {
      if (live.has(sidecar.vm_id) || sidecar.desired_state !== DesiredVmState.Running) continue;
      await this.lifecycle.locks.run(sidecar.vm_id, () => this.fenceOne(sidecar.vm_id, false));
    }
    await this.check();
  }

  /**
   * A heartbeat's answer, the heartbeat sent at `sentAtMs` (`now()`). With fence_after_s
   * the lease was renewed: the deadline moves to fence_after_s after the send, it is
   * remembered, and every fenced VM the answer does not supersede is unfenced.
   */
  async answered(sentAtMs: number, answer: LeaseAnswer): Promise<void> {
    const fenceAfterS = answer.fence_after_s;
    if (fenceAfterS === undefined) return;
    if (this.fenceAfterMs === null) {
      this.logger.log(
        `node ${this.config.nodeId}: the controller keeps this node's lease in etcd: protected VMs are ended if it is not renewed for ${fenceAfterS} s`,
      );
    }
    this.fenceAfterMs = fenceAfterS * 1000;
    this.copiesDefault = answer.copies_default;
    if (this.renewedAtMs === null || sentAtMs >= this.renewedAtMs) {
      this.renewedAtMs = sentAtMs;
      this.deadlineMs = sentAtMs + this.fenceAfterMs;
    }
    await this.remember(this.clock.wallNow() - (this.clock.now() - sentAtMs), fenceAfterS);
    // An answer that took longer than the lease renews nothing that still holds.
    if (this.clock.now() > this.deadlineMs) return;
    const superseded = new Set(answer.superseded_vm_ids ?? []);
    for (const vmId of this.fenced.ids()) {
      if (superseded.has(vmId)) continue;
      this.unfence(vmId);
      this.logger.log(
        `node ${this.config.nodeId}: lease renewed, VM ${vmId} unfenced; starting it again from its disk`,
      );
    }
  }

  /**
   * The watchdog's look (each second): past the deadline, every protected VM that runs or
   * should run is fenced. A VM with work under way (a start, a stop) is fenced once it ends.
   */
  async check(): Promise<void> {
    if (this.fenceAfterMs === null) return;
    await this.forgetGone();
    if (this.clock.now() <= this.deadlineMs) return;
    const sidecars = (await this.sidecars.all()).filter(
      (sidecar) => this.protects(sidecar) && !this.fenced.has(sidecar.vm_id),
    );
    if (sidecars.length === 0) return;
    const live = await this.driver.find(sidecars.map(({ vm_id }) => vm_id));
    for (const sidecar of sidecars) {
      const runs = live.has(sidecar.vm_id);
      if (!runs && sidecar.desired_state !== DesiredVmState.Running) continue;
      await this.lifecycle.locks.run(sidecar.vm_id, () => this.fenceOne(sidecar.vm_id, true));
    }
  }

  /** Under the VM's lock: fenced, its process (if any) ended hard, the exit written down. */
  private async fenceOne(vmId: string, ending: boolean): Promise<void> {
    if (!this.lifecycle.mayMove(vmId, 'fence')) return;
    const sidecar = await this.sidecars.of(vmId);
    if (!sidecar) return;
    const since = this.renewedAtMs === null ? null : this.clock.now() - this.renewedAtMs;
    const notRenewed =
      since === null
        ? 'lease not renewed since the agent started'
        : `lease not renewed for ${Math.floor(since / 1000)}s`;
    const at = toRfc3339(this.clock.wallNow());
    this.lifecycle.move(vmId, 'fence');
    // Its start, once unfenced, is due at once: not a crash of the VM's own (no backoff).
    const why = `fenced at ${at}: node ${this.config.nodeId}'s ${notRenewed}`;
    this.lifecycle.restarts.fenced(vmId, why, this.agentClock.now());
    const runs = ending && (await this.driver.find([vmId])).has(vmId);
    if (!runs) {
      this.logger.warn(
        `node ${this.config.nodeId}: ${notRenewed}, holding VM ${vmId}: not started until a heartbeat renews it`,
      );
      return;
    }
    try {
      await this.driver.kill(vmId, sidecar.driver);
    } catch (error) {
      this.logger.error(
        `vm ${vmId}: fenced, but its process could not be ended: ${messageOf(error)}`,
      );
    }
    this.metrics.countFence();
    this.logger.warn(
      `node ${this.config.nodeId}: ${notRenewed}, fenced VM ${vmId} (its process ended hard, its disk kept; started again once a heartbeat renews the lease)`,
    );
    if (this.sidecars.isStandIn(sidecar)) return;
    sidecar.last_exit = `fenced at ${at}: ${notRenewed}`;
    await this.files.writeSidecar(sidecar).catch((error: unknown) => {
      this.logger.error(`vm ${vmId}: could not update its sidecar: ${messageOf(error)}`);
    });
  }

  private protects(sidecar: VmSidecar): boolean {
    return isProtected(sidecar, this.copiesDefault);
  }

  /** Out of the fenced phase: the reconciliation's again, to start at once. */
  private unfence(vmId: string): void {
    if (!this.fenced.has(vmId)) return;
    this.lifecycle.move(vmId, 'unfence');
    this.lifecycle.announce();
  }

  /** Fenced VMs no longer here (superseded and set aside, deleted) are fenced no more. */
  private async forgetGone(): Promise<void> {
    for (const vmId of this.fenced.ids()) {
      if ((await this.sidecars.of(vmId)) === undefined) this.unfence(vmId);
    }
  }

  private async remember(renewedAtWallMs: number, fenceAfterS: number): Promise<void> {
    try {
      await this.lease.write({
        fence_after_s: fenceAfterS,
        renewed_at_ms: renewedAtWallMs,
        ...(this.copiesDefault !== undefined && { copies_default: this.copiesDefault }),
      });
      this.leaseWriteFailed = false;
    } catch (error) {
      if (this.leaseWriteFailed) return;
      this.leaseWriteFailed = true;
      this.logger.error(
        `node ${this.config.nodeId}: could not remember the lease in ${this.files.root}/fencing.json (${messageOf(error)}); an agent restarted now would not hold its protected VMs`,
      );
    }
  }
}
