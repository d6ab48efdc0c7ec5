import { randomUUID } from 'node:crypto';
import {
  KeyClaim,
  KeyClaims,
  KeyDispatch,
  OwnKeyClaim,
  decodeKeyDispatch,
  encodeKeyDispatch,
} from '../key-claims.repository';
import { StoreUnavailableError } from '../store-unavailable.error';
import { EtcdClient } from './etcd.client';
import { EtcdKeyValue } from './etcd-wire';
import { ETCD_PREFIX } from './etcd-nodes.repository';

const CLAIM_ATTEMPTS = 5;

/** One key per claimed Idempotency-Key: "<token>\n<spawn key>", on a lease of the claim's length. */
const claimKey = (keyHash: string) => `${ETCD_PREFIX}key-claim/${keyHash}`;
/** The VM a keyed create dispatched (see encodeKeyDispatch), on a lease of a day. */
const dispatchKey = (keyHash: string) => `${ETCD_PREFIX}key-dispatch/${keyHash}`;

/**
 * Claims in the etcd every controller shares. etcd ends a claim nobody released with its
 * lease: etcd's leader counts the TTL, so every controller agrees on it without a shared clock;
 * leases are whole seconds, at least etcd's minimum (2 s by default), so a claim lasts its
 * `holdMs` rounded up to those.
 */
export class EtcdKeyClaims extends KeyClaims {
  constructor(private readonly etcd: EtcdClient) {
    super();
  }

  /**
   * Looks first (a claim held is answered without a lease granted), then takes it in a txn
   * that puts only where no claim is: of simultaneous takers, one puts.
   */
  async claim(keyHash: string, spawnKey: string, holdMs: number): Promise<KeyClaim> {
    const key = claimKey(keyHash);
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const held = (await this.etcd.range(key)).kvs[0];
      if (held) return this.others(held);
      const token = randomUUID();
      const lease = await this.etcd.grantLease(holdMs / 1000);
      const { succeeded, ranges } = await this.etcd.txn(
        [{ key, target: 'CREATE', result: 'EQUAL', revision: 0 }],
        [{ put: { key, value: `${token}\n${spawnKey}`, lease } }],
        [{ range: { key } }],
      );
      if (succeeded) return { kind: 'own', keyHash, token };
      await this.etcd.revokeLease(lease);
      // Taken meanwhile; gone again by the time it was read: look once more.
      if (ranges[0][0]) return this.others(ranges[0][0]);
    }
    throw new StoreUnavailableError(
      `the claim on an Idempotency-Key changed hands ${CLAIM_ATTEMPTS} times in a row; try again`,
    );
  }

  /** Whose claim holds the key, and for how long more (its lease, whole seconds). */
  private async others(held: EtcdKeyValue): Promise<KeyClaim> {
    const [, spawnKey] = held.value.split('\n');
    const leftS = await this.etcd.leaseTimeToLive(held.lease);
    return {
      kind: 'others',
      spawnKey,
      expiresInMs: Math.max(1, leftS) * 1000,
    };
  }

  async release(claim: OwnKeyClaim): Promise<void> {
    const key = claimKey(claim.keyHash);
    const held = (await this.etcd.range(key)).kvs[0];
    if (!held || !held.value.startsWith(`${claim.token}\n`)) return;
    const { succeeded } = await this.etcd.txn(
      [{ key, target: 'MOD', result: 'EQUAL', revision: held.modRevision }],
      [{ deleteRange: { key } }],
    );
    if (succeeded) await this.etcd.revokeLease(held.lease);
  }

  /** Its lease kept alive (back to the length it was granted with, the claim's `holdMs`). */
  async renew(claim: OwnKeyClaim): Promise<boolean> {
    const held = (await this.etcd.range(claimKey(claim.keyHash))).kvs[0];
    if (!held || !held.value.startsWith(`${claim.token}\n`)) return false;
    return (await this.etcd.keepAliveLease(held.lease)) > 0;
  }

  async recordDispatch(keyHash: string, dispatch: KeyDispatch, keepMs: number): Promise<void> {
    const key = dispatchKey(keyHash);
    const lease = await this.etcd.grantLease(keepMs / 1000);
    const { ranges } = await this.etcd.txn(
      [],
      [{ range: { key } }, { put: { key, value: encodeKeyDispatch(dispatch), lease } }],
    );
    // The record's earlier lease (if any) ends now rather than a day later.
    const before = ranges[0][0];
    if (before && before.lease !== '0' && before.lease !== lease)
      await this.etcd.revokeLease(before.lease);
  }

  async forgetDispatch(keyHash: string, vmId: string): Promise<void> {
    const key = dispatchKey(keyHash);
    const kept = (await this.etcd.range(key)).kvs[0];
    if (!kept || decodeKeyDispatch(kept.value)?.vmId !== vmId) return;
    const { succeeded } = await this.etcd.txn(
      [{ key, target: 'MOD', result: 'EQUAL', revision: kept.modRevision }],
      [{ deleteRange: { key } }],
    );
    if (succeeded) await this.etcd.revokeLease(kept.lease);
  }

  async dispatchOf(keyHash: string): Promise<KeyDispatch | undefined> {
    return decodeKeyDispatch((await this.etcd.range(dispatchKey(keyHash))).kvs[0]?.value);
  }
}
