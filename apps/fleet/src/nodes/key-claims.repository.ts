/** The claim is this controller's: it creates with the key, then releases the claim. */
export interface OwnKeyClaim {
  kind: 'own';
  keyHash: string;
  /** Names this taking of the claim, so a release never ends someone else's. */
  token: string;
}

/** Another create holds the key: made with `spawnKey`, held for at most `expiresInMs` more. */
export interface OthersKeyClaim {
  kind: 'others';
  spawnKey: string;
  expiresInMs: number;
}

export type KeyClaim = OwnKeyClaim | OthersKeyClaim;

/**
 * Claims on Idempotency-Keys, kept in the store of fleet state so that every controller on it
 * sees them: of all the creates with one key, only the holder of its claim places and
 * dispatches; the others wait for it to end and then find its VM. A claim ends when its holder
 * releases it or, should the holder die, `holdMs` after it was taken, measured by the store.
 * Bound by NodesModule from the chosen store, beside NodesRepository.
 */
export abstract class KeyClaims {
  /**
   * Takes the claim on `keyHash` (the first half of `spawnKey`) for `holdMs`, atomically:
   * of any number of simultaneous takers, on any controllers, one gets it. Held already
   * (and not past its deadline): says by which spawn key and for how long.
   */
  abstract claim(keyHash: string, spawnKey: string, holdMs: number): Promise<KeyClaim>;

  /** Ends the claim, if it is still this one: one that expired and was taken again stays. */
  abstract release(claim: OwnKeyClaim): Promise<void>;
}
