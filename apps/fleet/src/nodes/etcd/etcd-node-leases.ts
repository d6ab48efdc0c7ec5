import { Logger } from '@nestjs/common';
import { DeclareDeadOutcome, LapsedNode, NodeLeases } from '../node-leases';
import { StoreUnavailableError } from '../store-unavailable.error';
import { EtcdClient } from './etcd.client';
import { prefixEnd } from './etcd-wire';

/** The node's fencing lease: the key lives as long as the lease (TTL fence_after_s). */
export const LEASE_PREFIX = 'ppn-fleet/leases/';
/** The node's last renewal, kept past its lease's end: recovery waits recover_after_s from it. */
export const RENEWED_PREFIX = 'ppn-fleet/lease-renewed/';
/** A node being recovered: its lease is not renewed while this key exists. */
export const RECOVERING_PREFIX = 'ppn-fleet/recovering/';
/** A VM's generation: raised each time a recovery makes it anew on another node. */
export const GENERATION_PREFIX = 'ppn-fleet/vm-generations/';

/** Node ids whose lease id this controller keeps (beyond: forgotten, read again from etcd). */
const LEASE_IDS_KEPT = 100_000;
/** Tries of a generation's compare-and-set against other controllers' raises. */
const GENERATION_TRIES = 5;

/** The etcd calls the leases use: the client, or a test's in-memory etcd. */
export type LeaseEtcd = Pick<
  EtcdClient,
  'range' | 'txn' | 'grantLease' | 'keepAliveLease' | 'leaseTimeToLive'
>;

function renewedAtOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  try {
    const renewed = (JSON.parse(value) as { renewed_at?: unknown }).renewed_at;
    return typeof renewed === 'number' && Number.isFinite(renewed) ? renewed : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Node leases in the etcd every controller shares: whichever controller a heartbeat reaches
 * keeps the node's lease alive (its id read from the lease key), so a controller's death loses
 * no lease, and a lease not renewed ends for everyone at once, timed by etcd's leader.
 */
export class EtcdNodeLeases extends NodeLeases {
  readonly enabled = true;
  private readonly logger = new Logger('NodeLeases');
  /** The lease id last used for each node here, so a renewal costs a keep-alive and a txn. */
  private readonly leaseIds = new Map<string, string>();
  /** Nodes whose renewal failed, so the failure is logged once until it works again. */
  private readonly failing = new Set<string>();

  constructor(
    private readonly etcd: LeaseEtcd,
    private readonly fenceAfterS: number,
  ) {
    super();
  }

  async renew(nodeId: string, wallMs: number): Promise<number | undefined> {
    const leaseKey = LEASE_PREFIX + nodeId;
    try {
      let lease = this.leaseIds.get(nodeId);
      if (lease === undefined) {
        const held = (await this.etcd.range(leaseKey)).kvs[0];
        if (held && held.lease !== '0') lease = held.lease;
      }
      if (lease !== undefined && (await this.etcd.keepAliveLease(lease)) === 0) lease = undefined;
      lease ??= await this.etcd.grantLease(this.fenceAfterS);
      const value = JSON.stringify({ renewed_at: Math.floor(wallMs) });
      // Never while the node is being recovered: its VMs are being made anew elsewhere.
      const { succeeded } = await this.etcd.txn(
        [{ key: RECOVERING_PREFIX + nodeId, target: 'CREATE', result: 'EQUAL', revision: 0 }],
        [
          { put: { key: leaseKey, value, lease } },
          { put: { key: RENEWED_PREFIX + nodeId, value } },
        ],
      );
      if (!succeeded) {
        this.noteFailure(
          nodeId,
          'it is being recovered (its lease lapsed): its lease is not renewed until its protected VMs run elsewhere',
        );
        return undefined;
      }
      if (this.leaseIds.size >= LEASE_IDS_KEPT) this.leaseIds.clear();
      this.leaseIds.set(nodeId, lease);
      if (this.failing.delete(nodeId)) this.logger.log(`node ${nodeId}: lease renewed again`);
      return this.fenceAfterS;
    } catch (error) {
      this.leaseIds.delete(nodeId);
      if (!(error instanceof StoreUnavailableError)) throw error;
      this.noteFailure(
        nodeId,
        `${error.message}; its agent fences its protected VMs unless a renewal comes in time`,
      );
      return undefined;
    }
  }

  async lapsed(beforeWallMs: number): Promise<LapsedNode[]> {
    const { ranges } = await this.etcd.txn(
      [],
      [LEASE_PREFIX, RENEWED_PREFIX, RECOVERING_PREFIX].map((prefix) => ({
        range: { key: prefix, rangeEnd: prefixEnd(prefix) },
      })),
    );
    const [leased, renewed, recovering] = ranges.map(
      (kvs, index) =>
        new Map(
          kvs.map((kv) => [
            kv.key.slice([LEASE_PREFIX, RENEWED_PREFIX, RECOVERING_PREFIX][index].length),
            kv.value,
          ]),
        ),
    );
    const found: LapsedNode[] = [];
    for (const [nodeId, value] of recovering) {
      found.push({
        nodeId,
        renewedAtWallMs: renewedAtOf(renewed.get(nodeId) ?? value),
        recovering: true,
      });
    }
    for (const [nodeId, value] of renewed) {
      if (recovering.has(nodeId) || leased.has(nodeId)) continue;
      const renewedAt = renewedAtOf(value);
      if (renewedAt !== undefined && renewedAt < beforeWallMs) {
        found.push({ nodeId, renewedAtWallMs: renewedAt, recovering: false });
      }
    }
    return found;
  }

  async beginRecovery(nodeId: string): Promise<boolean> {
    const { succeeded } = await this.etcd.txn(
      [{ key: LEASE_PREFIX + nodeId, target: 'CREATE', result: 'EQUAL', revision: 0 }],
      [{ put: { key: RECOVERING_PREFIX + nodeId, value: JSON.stringify({ declared: false }) } }],
    );
    return succeeded;
  }

  async endRecovery(nodeId: string): Promise<void> {
    await this.etcd.txn(
      [],
      [
        { deleteRange: { key: RECOVERING_PREFIX + nodeId } },
        { deleteRange: { key: RENEWED_PREFIX + nodeId } },
      ],
    );
  }

  async declareDead(nodeId: string): Promise<DeclareDeadOutcome> {
    const { succeeded, ranges } = await this.etcd.txn(
      [{ key: LEASE_PREFIX + nodeId, target: 'CREATE', result: 'EQUAL', revision: 0 }],
      [{ range: { key: RENEWED_PREFIX + nodeId } }, { range: { key: RECOVERING_PREFIX + nodeId } }],
      [{ range: { key: LEASE_PREFIX + nodeId } }],
    );
    if (!succeeded) {
      const held = ranges[0][0];
      const leftS =
        held && held.lease !== '0' ? await this.etcd.leaseTimeToLive(held.lease).catch(() => 0) : 0;
      return { kind: 'lease-live', renewedAtWallMs: renewedAtOf(held?.value), leftS };
    }
    const renewedAt = renewedAtOf(ranges[0][0]?.value);
    if (ranges[0].length === 0 && ranges[1].length === 0) return { kind: 'unknown' };
    // Only if its lease is still gone: a node that came back in between is not marked.
    const marked = await this.etcd.txn(
      [{ key: LEASE_PREFIX + nodeId, target: 'CREATE', result: 'EQUAL', revision: 0 }],
      [{ put: { key: RECOVERING_PREFIX + nodeId, value: JSON.stringify({ declared: true }) } }],
    );
    if (!marked.succeeded) return { kind: 'lease-live', renewedAtWallMs: renewedAt, leftS: 0 };
    return { kind: 'declared', renewedAtWallMs: renewedAt };
  }

  async raiseGeneration(vmId: string): Promise<number> {
    const key = GENERATION_PREFIX + vmId;
    for (let attempt = 0; attempt < GENERATION_TRIES; attempt++) {
      const held = (await this.etcd.range(key)).kvs[0];
      const next = generationOf(held?.value) + 1;
      const { succeeded } = await this.etcd.txn(
        [{ key, target: 'MOD', result: 'EQUAL', revision: held?.modRevision ?? 0 }],
        [{ put: { key, value: String(next) } }],
      );
      if (succeeded) return next;
    }
    throw new StoreUnavailableError(
      `vm ${vmId}: its generation was raised by others ${GENERATION_TRIES} times meanwhile`,
    );
  }

  async generationsOf(vmIds: readonly string[]): Promise<Map<string, number>> {
    const found = new Map<string, number>();
    if (vmIds.length === 0) return found;
    const { ranges } = await this.etcd.txn(
      [],
      vmIds.map((vmId) => ({ range: { key: GENERATION_PREFIX + vmId } })),
    );
    ranges.forEach((kvs, index) => {
      if (kvs[0]) found.set(vmIds[index], generationOf(kvs[0].value));
    });
    return found;
  }

  private noteFailure(nodeId: string, why: string): void {
    if (this.failing.has(nodeId)) return;
    if (this.failing.size < LEASE_IDS_KEPT) this.failing.add(nodeId);
    this.logger.warn(`node ${nodeId}: lease not renewed, answered without fence_after_s: ${why}`);
  }
}

function generationOf(value: string | undefined): number {
  const number = Number(value ?? '0');
  return Number.isSafeInteger(number) && number >= 0 ? number : 0;
}
