import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { describeRequestFailure } from '@app/daemon';
import { HEARTBEAT_JITTER, heartbeatRequestTimeoutMs } from '@app/fleet-domain';
import type { Subscription } from 'rxjs';
import { VmHostConfig } from '../config/vm-host.config';
import { HostMetrics } from '../metrics/host-metrics.service';
import { NodeVmsSource } from '../vms/node-vms.source';
import { HeartbeatService } from './heartbeat.service';

const TIMER = 'heartbeat';

/**
 * Sends the first heartbeat at once, then one per interval with +-10% jitter so a fleet
 * restarted together does not beat in lockstep. Never two in flight; a failed beat is one
 * warning and the next one goes out on time.
 */
@Injectable()
export class HeartbeatScheduler implements OnApplicationShutdown {
  private readonly logger = new Logger('Heartbeat');
  private readonly intervalMs: number;
  private readonly timeoutMs: number;
  private inFlight = false;
  private beatAgain = false;
  private stopped = true;
  private failures = 0;
  private delivered = false;
  private readonly shutdown = new AbortController();
  private vmChanges?: Subscription;

  constructor(
    private readonly config: VmHostConfig,
    private readonly heartbeat: HeartbeatService,
    private readonly registry: SchedulerRegistry,
    private readonly vms: NodeVmsSource,
    private readonly metrics: HostMetrics = new HostMetrics(),
  ) {
    this.intervalMs = config.heartbeatIntervalS * 1000;
    // A request (once composed) that takes longer is abandoned; below the interval.
    this.timeoutMs = heartbeatRequestTimeoutMs(this.intervalMs);
  }

  /** Starts beating; called once the agent's own API is listening. */
  start(): void {
    this.stopped = false;
    this.vmChanges = this.vms.changes.subscribe(() => this.beatNow());
    void this.beat();
  }

  /** Beats now (after a VM was created or deleted), so placement sees fresh RAM. */
  beatNow(): void {
    if (this.stopped) return;
    if (this.inFlight) {
      this.beatAgain = true;
      return;
    }
    void this.beat();
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    this.vmChanges?.unsubscribe();
    this.clearTimer();
    this.shutdown.abort(new Error('agent shutting down'));
  }

  /** The next delay: the interval +-10% (HEARTBEAT_JITTER). */
  nextDelayMs(random = Math.random()): number {
    return Math.round(this.intervalMs * (1 - HEARTBEAT_JITTER + 2 * HEARTBEAT_JITTER * random));
  }

  private async beat(): Promise<void> {
    if (this.stopped || this.inFlight) return;
    this.inFlight = true;
    this.beatAgain = false;
    this.clearTimer();
    try {
      await this.heartbeat.send(this.timeoutMs, this.shutdown.signal);
      this.onDelivered();
    } catch (error) {
      if (!this.stopped) this.onFailed(error);
    } finally {
      this.inFlight = false;
      if (!this.stopped) this.schedule(this.beatAgain ? 0 : this.nextDelayMs());
    }
  }

  private onDelivered(): void {
    if (!this.delivered) {
      this.delivered = true;
      this.logger.log(
        `node ${this.config.nodeId} enrolled: heartbeating to ${this.heartbeat.endpointForLogs} every ${this.config.heartbeatIntervalS} s${this.failures > 0 ? ` (after ${this.failures} failed attempt(s))` : ''}`,
      );
    } else if (this.failures > 0) {
      this.logger.log(
        `node ${this.config.nodeId}: heartbeat delivered again after ${this.failures} failed attempt(s)`,
      );
    }
    this.failures = 0;
  }

  private onFailed(error: unknown): void {
    this.failures += 1;
    this.metrics.countHeartbeatFailure();
    this.logger.warn(
      `node ${this.config.nodeId}: heartbeat to ${this.config.fleetEndpointForLogs} failed (${describeRequestFailure(error, this.timeoutMs)}); retrying in about ${this.config.heartbeatIntervalS} s`,
    );
  }

  private schedule(delayMs: number): void {
    this.clearTimer();
    this.registry.addTimeout(
      TIMER,
      setTimeout(() => void this.beat(), delayMs),
    );
  }

  private clearTimer(): void {
    if (this.registry.doesExist('timeout', TIMER)) this.registry.deleteTimeout(TIMER);
  }
}
