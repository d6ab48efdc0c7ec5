import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { KeyClaim, KeyClaims, OwnKeyClaim } from '../key-claims.repository';

interface HeldClaim {
  token: string;
  spawnKey: string;
  /** On the monotonic clock: a step of the wall clock neither ends nor prolongs a claim. */
  expiresAtMs: number;
}

/** Claims for the in-memory store: one controller, so they only order its own creates. */
export class InMemoryKeyClaims extends KeyClaims {
  private readonly held = new Map<string, HeldClaim>();

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
}
