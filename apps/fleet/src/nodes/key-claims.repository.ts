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
 * A VM the controller itself dispatched with an Idempotency-Key: the only VM that key can
 * answer (a VM a node merely reports with the key never does). Recorded before the agent is
 * asked, with `unresolvedUntilMs` (see KeyedDispatch), and again without it once it accepted.
 */
export interface KeyDispatch {
  spawnKey: string;
  nodeId: string;
  vmId: string;
  unresolvedUntilMs?: number;
}

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

  /**
   * Holds the claim `holdMs` more from now, if it is still this one (false: it expired, and may
   * be another's): a long holder (a drain) keeps a short claim alive, so it ends soon after
   * its holder dies. etcd keeps the lease's own length (the `holdMs` it was claimed with).
   */
  abstract renew(claim: OwnKeyClaim, holdMs: number): Promise<boolean>;

  /**
   * Records the VM a keyed create dispatches (about to ask its agent: unresolved; or its agent
   * accepted it), for `keepMs` (a day: as long as the agent honours the key): a retry with the
   * key finds it there, and nowhere else.
   */
  abstract recordDispatch(keyHash: string, dispatch: KeyDispatch, keepMs: number): Promise<void>;

  /** Forgets the record, if it still names `vmId`: its agent made nothing (it refused). */
  abstract forgetDispatch(keyHash: string, vmId: string): Promise<void>;

  /** The VM the controller dispatched for `keyHash`, if it recorded one still kept. */
  abstract dispatchOf(keyHash: string): Promise<KeyDispatch | undefined>;
}

/**
 * `<spawn key>\n<node id>\n<vm id>`, then `\n<unresolved until, ms>` while unresolved: none
 * of them holds a newline. A record of an earlier version (three lines) reads as resolved.
 */
export function encodeKeyDispatch(dispatch: KeyDispatch): string {
  const text = `${dispatch.spawnKey}\n${dispatch.nodeId}\n${dispatch.vmId}`;
  const until = dispatch.unresolvedUntilMs;
  return until === undefined ? text : `${text}\n${Math.ceil(until)}`;
}

export function decodeKeyDispatch(text: string | null | undefined): KeyDispatch | undefined {
  const [spawnKey, nodeId, vmId, until, ...rest] = (text ?? '').split('\n');
  if (!spawnKey || !nodeId || !vmId || rest.length > 0) return undefined;
  if (until === undefined) return { spawnKey, nodeId, vmId };
  if (!/^[0-9]{1,16}$/.test(until)) return undefined;
  return { spawnKey, nodeId, vmId, unresolvedUntilMs: Number(until) };
}
