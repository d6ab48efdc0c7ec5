import { Clock } from '@app/daemon';
import type {
  EtcdCompare,
  EtcdKeyValue,
  EtcdOp,
  EtcdTxnResult,
} from '../../apps/fleet/src/nodes/etcd/etcd-wire';
import { StoreUnavailableError } from '../../apps/fleet/src/nodes/store-unavailable.error';

/**
 * An etcd in memory for unit specs: keys with create/mod revisions, txns with compares, and
 * leases whose TTL runs on the test's clock (a lease past its end is gone, with its keys).
 * `down = true` makes every call fail as an unreachable etcd does.
 */
export class FakeEtcd {
  down = false;
  private revision = 1;
  private nextLease = 100;
  private readonly keys = new Map<string, Omit<EtcdKeyValue, 'key'>>();
  private readonly leases = new Map<string, { ttlS: number; endsAtMs: number }>();

  constructor(private readonly clock: Clock) {}

  range(
    key: string,
    options: { rangeEnd?: string; minModRevision?: number } = {},
  ): Promise<{ kvs: EtcdKeyValue[]; revision: number }> {
    return this.txn([], [{ range: { key, ...options } }]).then((result) => ({
      kvs: result.ranges[0],
      revision: result.revision,
    }));
  }

  txn(compare: EtcdCompare[], success: EtcdOp[], failure: EtcdOp[] = []): Promise<EtcdTxnResult> {
    this.check();
    const succeeded = compare.every((each) => this.holds(each));
    const ranges: EtcdKeyValue[][] = [];
    let wrote = false;
    for (const op of succeeded ? success : failure) {
      if ('range' in op) {
        const since = op.range.minModRevision ?? 0;
        ranges.push(
          this.read(op.range.key, op.range.rangeEnd).filter((kv) => kv.modRevision >= since),
        );
      } else if ('put' in op) {
        if (!wrote) this.revision += 1;
        wrote = true;
        const { key, value, lease } = op.put;
        if (lease && !this.leases.has(lease)) throw new StoreUnavailableError('lease not found');
        const before = this.keys.get(key);
        this.keys.set(key, {
          value,
          lease: lease ?? '0',
          modRevision: this.revision,
          createRevision: before?.createRevision ?? this.revision,
        });
        ranges.push([]);
      } else {
        if (!wrote) this.revision += 1;
        wrote = true;
        for (const kv of this.read(op.deleteRange.key, op.deleteRange.rangeEnd)) {
          this.keys.delete(kv.key);
        }
        ranges.push([]);
      }
    }
    return Promise.resolve({ succeeded, revision: this.revision, ranges });
  }

  grantLease(ttlS: number): Promise<string> {
    this.check();
    const id = String(this.nextLease++);
    this.leases.set(id, { ttlS: Math.ceil(ttlS), endsAtMs: this.clock.now() + ttlS * 1000 });
    return Promise.resolve(id);
  }

  keepAliveLease(id: string): Promise<number> {
    this.check();
    const lease = this.leases.get(id);
    if (!lease) return Promise.resolve(0);
    lease.endsAtMs = this.clock.now() + lease.ttlS * 1000;
    return Promise.resolve(lease.ttlS);
  }

  leaseTimeToLive(id: string): Promise<number> {
    this.check();
    const lease = this.leases.get(id);
    return Promise.resolve(
      lease ? Math.max(0, Math.ceil((lease.endsAtMs - this.clock.now()) / 1000)) : 0,
    );
  }

  revokeLease(id: string): Promise<void> {
    if (this.down) return Promise.resolve();
    this.endLease(id);
    return Promise.resolve();
  }

  /** The value at `key`, or undefined (after expiring leases). */
  get(key: string): string | undefined {
    this.expire();
    return this.keys.get(key)?.value;
  }

  private check(): void {
    if (this.down) throw new StoreUnavailableError('fleet state store (etcd) unavailable: down');
    this.expire();
  }

  private expire(): void {
    for (const [id, lease] of this.leases) {
      if (lease.endsAtMs <= this.clock.now()) this.endLease(id);
    }
  }

  private endLease(id: string): void {
    this.leases.delete(id);
    for (const [key, kv] of this.keys) if (kv.lease === id) this.keys.delete(key);
  }

  private holds(compare: EtcdCompare): boolean {
    const kv = this.keys.get(compare.key);
    const actual = compare.target === 'CREATE' ? (kv?.createRevision ?? 0) : (kv?.modRevision ?? 0);
    if (compare.result === 'EQUAL') return actual === compare.revision;
    return compare.result === 'LESS' ? actual < compare.revision : actual > compare.revision;
  }

  private read(key: string, rangeEnd?: string): EtcdKeyValue[] {
    const found: EtcdKeyValue[] = [];
    for (const [each, kv] of [...this.keys].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const inRange = rangeEnd === undefined ? each === key : each >= key && each < rangeEnd;
      if (inRange) found.push({ key: each, ...kv });
    }
    return found;
  }
}
