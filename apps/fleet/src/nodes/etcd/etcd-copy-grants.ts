import { Clock } from '@app/daemon';
import { ID_PATTERN } from '@app/fleet-domain';
import { RecordedGrant, SharedCopyGrants } from '../shared-copy-grants';
import { EtcdClient } from './etcd.client';
import { prefixEnd } from './etcd-wire';

/** `ppn-fleet/copy-grants/<vm id>`: JSON {"<peer node id>": issued-at ms, ...}, on a lease. */
export const COPY_GRANTS_PREFIX = 'ppn-fleet/copy-grants/';

/**
 * A record lives 40 minutes, twice a copy grant's life (the planner's COPY_GRANT_LIFE_MS,
 * 20 min), renewed with each grant issued again (every 10 min while the VM is planned): a
 * controller started later learns every grant a peer may still copy with, and records of
 * VMs no longer planned end by themselves.
 */
export const GRANT_RECORD_TTL_S = 40 * 60;
/** A lease is reused for new records while it has this long left (more than a grant's life). */
const LEASE_REUSED_WHILE_MS = 25 * 60_000;
/** Peers read from one record at most (a plan names at most MAX_VM_COPIES). */
const MAX_PEERS_READ = 8;

/** The etcd calls the grants use: the client, or a test's in-memory etcd. */
export type CopyGrantsEtcd = Pick<EtcdClient, 'range' | 'txn' | 'grantLease'>;

/**
 * Copy grants in the etcd every controller shares: the leader's planner writes each VM's
 * granted peers before pushing the plan; every controller reads the records changed since
 * its last read (min_mod_revision): the reply carries what changed, not the fleet (etcd still
 * scans the prefix on its side, one record per protected VM).
 */
export class EtcdCopyGrants extends SharedCopyGrants {
  readonly shared = true;
  /** The lease new records go on, and when it ends at the latest (this clock). */
  private lease?: { id: string; endsAtMs: number };
  /** The store's revision at the last read: the next reads only what changed after it. */
  private readRevision = 0;

  constructor(
    private readonly etcd: CopyGrantsEtcd,
    private readonly clock: Clock,
  ) {
    super();
  }

  async record(vmId: string, grants: readonly RecordedGrant[]): Promise<void> {
    const peers = Object.fromEntries(grants.map((grant) => [grant.peerId, grant.issuedAtWallMs]));
    const lease = await this.currentLease();
    try {
      await this.etcd.txn(
        [],
        [{ put: { key: COPY_GRANTS_PREFIX + vmId, value: JSON.stringify(peers), lease } }],
      );
    } catch (error) {
      // The lease may be what failed (ended early): the next record takes a new one.
      this.lease = undefined;
      throw error;
    }
  }

  async since(): Promise<RecordedGrant[]> {
    const { kvs, revision } = await this.etcd.range(COPY_GRANTS_PREFIX, {
      rangeEnd: prefixEnd(COPY_GRANTS_PREFIX),
      minModRevision: this.readRevision + 1,
    });
    this.readRevision = Math.max(this.readRevision, revision);
    return kvs.flatMap((kv) => grantsOf(kv.key.slice(COPY_GRANTS_PREFIX.length), kv.value));
  }

  private async currentLease(): Promise<string> {
    const nowMs = this.clock.now();
    if (this.lease && this.lease.endsAtMs - nowMs > LEASE_REUSED_WHILE_MS) return this.lease.id;
    // Timed from before the call: the lease ends no earlier than this says.
    const id = await this.etcd.grantLease(GRANT_RECORD_TTL_S);
    this.lease = { id, endsAtMs: nowMs + GRANT_RECORD_TTL_S * 1000 };
    return id;
  }
}

/** A record's grants; a malformed one (no controller wrote it) gives none. */
function grantsOf(vmId: string, value: string): RecordedGrant[] {
  if (!ID_PATTERN.test(vmId)) return [];
  let peers: unknown;
  try {
    peers = JSON.parse(value);
  } catch {
    return [];
  }
  if (typeof peers !== 'object' || peers === null || Array.isArray(peers)) return [];
  return Object.entries(peers)
    .slice(0, MAX_PEERS_READ)
    .filter(
      (entry): entry is [string, number] =>
        ID_PATTERN.test(entry[0]) && typeof entry[1] === 'number' && Number.isFinite(entry[1]),
    )
    .map(([peerId, issuedAtWallMs]) => ({ vmId, peerId, issuedAtWallMs }));
}
