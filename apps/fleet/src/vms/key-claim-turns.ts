import { Logger } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { RAM_HOLD_MARGIN_MS, keyHashOf } from '@app/fleet-domain';
import { KeyClaims } from '../nodes/key-claims.repository';
import { VmCreateSettings } from './vm-create.settings';
import { VmHostClientSettings } from './agent-calls';
import { IdempotencyKeyClaimWaitError, IdempotencyKeyReusedError } from './vms.errors';

/** How long a keyed create first waits for another create's claim on its key to end... */
export const KEY_CLAIM_FIRST_WAIT_MS = 20;
/** ...doubling up to this between looks. */
export const KEY_CLAIM_LONGEST_WAIT_MS = 250;

/**
 * Turns at a key's claim in the shared store, for a keyed create on any controller: the
 * create runs only while this one holds the claim. Part of VmPlacementService.
 */
export class KeyClaimTurns {
  constructor(
    private readonly keyClaims: KeyClaims,
    private readonly createSettings: VmCreateSettings,
    private readonly vmHostSettings: VmHostClientSettings,
    private readonly logger: Logger,
  ) {}

  /**
   * A keyed create, whichever controller takes it: only the holder of the key's claim (in the
   * shared store) places and dispatches. Another create with the key waits for the claim to
   * end, then takes it and finds what the holder left: its VM (answered as a replay), its RAM
   * still held (a holder that died mid-dispatch: the same node is asked again with the same
   * key), or nothing (the holder failed: this create places anew). Held for another body: 422.
   * Still held after keyClaimWaitMs (a claim the store keeps with no deadline, other creates
   * taking it in turn): 503, and the client retries with the same key.
   */
  async run<T>(spawnKey: string, createKeyed: () => Promise<T>): Promise<T> {
    const keyHash = keyHashOf(spawnKey);
    // Longer than a create can take (every node it may try, the hold's margin), so a live
    // holder always ends its claim itself; a dead one's ends by itself.
    const holdMs =
      Math.max(this.createSettings.dispatchDeadlineMs, this.vmHostSettings.timeoutMs) +
      RAM_HOLD_MARGIN_MS;
    // Real time, not the clock's: this bounds how long the client waits.
    const waitUntil = performance.now() + this.createSettings.keyClaimWaitMs;
    let waitMs = KEY_CLAIM_FIRST_WAIT_MS;
    for (;;) {
      const claim = await this.keyClaims.claim(keyHash, spawnKey, holdMs);
      if (claim.kind === 'own') {
        try {
          return await createKeyed();
        } finally {
          await this.keyClaims
            .release(claim)
            .catch((storeError: Error) =>
              this.logger.warn(
                `Idempotency-Key claim not released (${storeError.message}); it ends at its deadline`,
              ),
            );
        }
      }
      if (claim.spawnKey !== spawnKey) throw new IdempotencyKeyReusedError();
      if (waitMs === KEY_CLAIM_FIRST_WAIT_MS) {
        this.logger.log(
          'vm create: another create with the same Idempotency-Key is in progress; waiting for its VM',
        );
      }
      const waitLeft = waitUntil - performance.now();
      if (waitLeft <= 0) {
        this.logger.warn(
          'vm create: another create with the same Idempotency-Key is still in progress; answered 503',
        );
        throw new IdempotencyKeyClaimWaitError();
      }
      // A claim the store reports no time left for (Redis: no expiry, or just expired) is
      // looked at again after the usual pause, not at once.
      const pause = claim.expiresInMs > 0 ? Math.min(waitMs, claim.expiresInMs) : waitMs;
      await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.min(pause, waitLeft))));
      waitMs = Math.min(2 * waitMs, KEY_CLAIM_LONGEST_WAIT_MS);
    }
  }
}
