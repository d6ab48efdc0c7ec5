import { Logger } from '@nestjs/common';
import { KeyClaims, OwnKeyClaim } from '../nodes/key-claims.repository';
import { NodeDrainRefusedError } from './node-drain.errors';

/**
 * How long a drain's claim lasts unless renewed: a controller that dies mid-drain leaves the
 * node drainable again by another controller within this (the drained mark itself stays).
 */
export const DRAIN_CLAIM_HOLD_MS = 60_000;
/** How often a drain under way renews its claim: three tries before it would run out. */
export const DRAIN_CLAIM_RENEW_MS = 20_000;

/** The store's claim key of a drain of `nodeId`, beside the creates' and moves' claims. */
export const drainClaimKey = (nodeId: string) => `drain:${nodeId}`;

/** A drain's claim held and kept alive until `release()`. */
export interface HeldDrainClaim {
  release(): Promise<void>;
}

/**
 * Takes the one claim on draining `nodeId` in the store every controller shares (memory,
 * Redis or etcd, as creates and moves claim theirs): held by another drain, on this controller
 * or any other, a 409 naming the node. Held, it is renewed every DRAIN_CLAIM_RENEW_MS until
 * released; a renewal that fails is logged (the per-VM move claims still keep two drains from
 * moving one VM twice).
 */
export async function takeDrainClaim(
  claims: KeyClaims,
  nodeId: string,
  logger: Logger,
  renewEveryMs = DRAIN_CLAIM_RENEW_MS,
): Promise<HeldDrainClaim> {
  const key = drainClaimKey(nodeId);
  const claim = await claims.claim(key, key, DRAIN_CLAIM_HOLD_MS);
  if (claim.kind !== 'own') {
    throw new NodeDrainRefusedError(
      409,
      `node ${nodeId}: a drain of it is under way (on this controller or another; ppn-fleet node drain-status ${nodeId} shows it)`,
    );
  }
  return holdClaim(claims, claim, nodeId, logger, renewEveryMs);
}

function holdClaim(
  claims: KeyClaims,
  claim: OwnKeyClaim,
  nodeId: string,
  logger: Logger,
  renewEveryMs: number,
): HeldDrainClaim {
  let lost = false;
  const renew = async () => {
    const kept = await claims.renew(claim, DRAIN_CLAIM_HOLD_MS).catch((error: Error) => {
      logger.warn(`node ${nodeId}: drain claim not renewed (${error.message}); tried again`);
      return true;
    });
    if (!kept && !lost) {
      lost = true;
      logger.warn(
        `node ${nodeId}: drain claim ran out (the store lost it); another drain of it may start`,
      );
    }
  };
  const timer = setInterval(() => void renew(), renewEveryMs);
  // A renewal timer never keeps the process up on its own.
  timer.unref();
  return {
    release: async () => {
      clearInterval(timer);
      await claims.release(claim).catch((error: Error) => {
        logger.warn(
          `node ${nodeId}: drain claim not released (${error.message}); it ends by itself`,
        );
      });
    },
  };
}
