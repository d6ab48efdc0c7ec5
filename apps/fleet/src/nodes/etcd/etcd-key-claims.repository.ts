import { randomUUID } from 'node:crypto';
import {
  KeyClaim,
  KeyClaims,
  KeyDispatch,
  OwnKeyClaim,
  decodeKeyDispatch,
  encodeKeyDispatch,
} from '../key-claims.repository';
import { EtcdClient } from './etcd.client';
import { ETCD_PREFIX } from './etcd-nodes.repository';

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

  async claim(keyHash: string, spawnKey: string, holdMs: number): Promise<KeyClaim> {
    const token = randomUUID();
    const key = claimKey(keyHash);
    const lease = await this.etcd.grantLease(holdMs / 1000);
    const { succeeded, ranges } = await this.etcd.txn(
      [{ key, target: 'CREATE', result: 'EQUAL', revision: 0 }],
      [{ put: { key, value: `${token}\n${spawnKey}`, lease } }],
      [{ range: { key } }],
    );
    if (succeeded) return { kind: 'own', keyHash, token };
    await this.etcd.revokeLease(lease);
    const holder = ranges[0][0];
    if (!holder) return this.claim(keyHash, spawnKey, holdMs);
    const [, holderSpawnKey] = holder.value.split('\n');
    const leftS = await this.etcd.leaseTimeToLive(holder.lease);
    return {
      kind: 'others',
      spawnKey: holderSpawnKey,
      expiresInMs: Math.min(Math.ceil(holdMs), Math.max(1, leftS) * 1000),
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
