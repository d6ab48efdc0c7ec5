import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { KeyClaim, KeyClaims, KeyDispatch, OwnKeyClaim } from '../key-claims.repository';

/** Dispatch records kept at most; beyond, the oldest go first. */
const DISPATCHES_KEPT = 100_000;

interface HeldClaim {
  token: string;
  spawnKey: string;
  /** On the monotonic clock: a step of the wall clock neither ends nor prolongs a claim. */
  expiresAtMs: number;
}

/** Claims for the in-memory store: one controller, so they only order its own creates. */
export class InMemoryKeyClaims extends KeyClaims {
  private readonly held = new Map<string, HeldClaim>();
  /** In insertion order, which is deadline order (every record is kept as long). */
  private readonly dispatches = new Map<string, { dispatch: KeyDispatch; expiresAtMs: number }>();

  claim(keyHash: string, spawnKey: string, holdMs: number): Promise<KeyClaim> {
    const now = performance.now();
    // Few claims are ever held at once (creates in flight): ending the expired ones is cheap.
    for (const [hash, claim] of this.held) {
      if (claim.expiresAtMs <= now) this.held.delete(hash);
    }
    const current = this.held.get(keyHash);
    if (current) {
      return Promise.resolve({
        kind: 'others',
        spawnKey: current.spawnKey,
        expiresInMs: current.expiresAtMs - now,
      });
    }
    const token = randomUUID();
    this.held.set(keyHash, { token, spawnKey, expiresAtMs: now + holdMs });
    return Promise.resolve({ kind: 'own', keyHash, token });
  }

  release(claim: OwnKeyClaim): Promise<void> {
    if (this.held.get(claim.keyHash)?.token === claim.token) this.held.delete(claim.keyHash);
    return Promise.resolve();
  }

  renew(claim: OwnKeyClaim, holdMs: number): Promise<boolean> {
    const held = this.held.get(claim.keyHash);
    const now = performance.now();
    if (held?.token !== claim.token || held.expiresAtMs <= now) return Promise.resolve(false);
    held.expiresAtMs = now + holdMs;
    return Promise.resolve(true);
  }

  recordDispatch(keyHash: string, dispatch: KeyDispatch, keepMs: number): Promise<void> {
    const now = performance.now();
    for (const [hash, kept] of this.dispatches) {
      if (kept.expiresAtMs > now && this.dispatches.size < DISPATCHES_KEPT) break;
      this.dispatches.delete(hash);
    }
    this.dispatches.delete(keyHash);
    this.dispatches.set(keyHash, { dispatch, expiresAtMs: now + keepMs });
    return Promise.resolve();
  }

  forgetDispatch(keyHash: string, vmId: string): Promise<void> {
    if (this.dispatches.get(keyHash)?.dispatch.vmId === vmId) this.dispatches.delete(keyHash);
    return Promise.resolve();
  }

  dispatchOf(keyHash: string): Promise<KeyDispatch | undefined> {
    const kept = this.dispatches.get(keyHash);
    return Promise.resolve(
      kept && kept.expiresAtMs > performance.now() ? kept.dispatch : undefined,
    );
  }
}
