import { Logger } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { Leadership } from '../leadership';
import { StoreUnavailableError } from '../store-unavailable.error';
import { EtcdClient } from './etcd.client';

/** The one key whose holder leads: created only if absent, on the holder's lease. */
export const LEADER_KEY = 'ppn-fleet/leader';
/**
 * The leader's lease: a controller that dies (or loses etcd) is replaced within this and one
 * tick of the others' campaigns (LEADERSHIP_TICK_MS), about 8 s.
 */
export const LEADER_LEASE_S = 6;

/** The etcd calls the election uses: the client, or a test's in-memory etcd. */
export type ElectionEtcd = Pick<
  EtcdClient,
  'txn' | 'grantLease' | 'keepAliveLease' | 'revokeLease'
>;

/**
 * Leader election among the controllers sharing one etcd: a key created in a txn only if absent,
 * on a lease this controller keeps alive at each tick. A leader that cannot renew steps down by
 * its own clock before its lease can have ended in etcd (the lease's TTL counted from before the
 * renewal was sent), so two controllers never both believe they lead.
 */
export class EtcdLeaderElection extends Leadership {
  private readonly logger = new Logger('Leadership');
  private lease?: string;
  /** Until when (this controller's clock) the leadership holds without another renewal. */
  private leadsUntilMs = Number.NEGATIVE_INFINITY;
  private leading = false;
  private lastLeader?: string;
  private ticking = false;

  constructor(
    private readonly etcd: ElectionEtcd,
    private readonly clock: Clock,
    /** This controller, as the leader key and logs name it. */
    readonly controllerId: string,
    /** Told each time this controller starts or stops leading. */
    private readonly onChange: (leading: boolean) => void = () => {},
  ) {
    super();
  }

  isLeader(): boolean {
    return this.leading && this.clock.now() < this.leadsUntilMs;
  }

  async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      if (this.leading) await this.keep();
      else await this.campaign();
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      if (this.leading && this.clock.now() >= this.leadsUntilMs) {
        this.stepDown(`its lease could not be renewed (${error.message})`);
      }
    } finally {
      this.ticking = false;
    }
  }

  async resign(): Promise<void> {
    const lease = this.lease;
    this.lease = undefined;
    if (this.leading) this.stepDown('it stops');
    if (lease !== undefined) await this.etcd.revokeLease(lease);
  }

  private async keep(): Promise<void> {
    const sentAt = this.clock.now();
    const leftS = await this.etcd.keepAliveLease(this.lease!);
    if (leftS === 0) {
      this.lease = undefined;
      this.stepDown('its lease ended in etcd');
      return;
    }
    this.leadsUntilMs = sentAt + leftS * 1000;
    if (this.clock.now() >= this.leadsUntilMs) this.stepDown('its renewal came too late');
  }

  private async campaign(): Promise<void> {
    const sentAt = this.clock.now();
    const lease = await this.etcd.grantLease(LEADER_LEASE_S);
    const { succeeded, ranges } = await this.etcd.txn(
      [{ key: LEADER_KEY, target: 'CREATE', result: 'EQUAL', revision: 0 }],
      [{ put: { key: LEADER_KEY, value: this.controllerId, lease } }],
      [{ range: { key: LEADER_KEY } }],
    );
    if (!succeeded) {
      await this.etcd.revokeLease(lease);
      const leader = ranges[0]?.[0]?.value;
      if (leader !== undefined && leader !== this.lastLeader) {
        this.lastLeader = leader;
        this.logger.log(`controller ${this.controllerId} follows the leader, controller ${leader}`);
      }
      return;
    }
    this.lease = lease;
    this.leadsUntilMs = sentAt + LEADER_LEASE_S * 1000;
    this.leading = true;
    this.lastLeader = this.controllerId;
    this.logger.log(
      `controller ${this.controllerId} is the leader: it runs the staleness sweep and recoveries`,
    );
    this.onChange(true);
  }

  private stepDown(why: string): void {
    this.leading = false;
    this.leadsUntilMs = Number.NEGATIVE_INFINITY;
    this.lastLeader = undefined;
    this.logger.warn(`controller ${this.controllerId} is no longer the leader: ${why}`);
    this.onChange(false);
  }
}
