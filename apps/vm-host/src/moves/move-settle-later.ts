import type { VmRecord } from '@app/fleet-domain';
import { PeerCallError } from '../vms/copies/peer-transport';
import { messageOf } from '../vms/vms.errors';

/** The first pause between two asks of the new node, doubled each time up to the last. */
export const ASK_AGAIN_FIRST_MS = 5_000;
export const ASK_AGAIN_MAX_MS = 30_000;
/** The waiting is logged at most this often. */
export const WAITING_LOG_EVERY_MS = 60_000;

/**
 * How a guest left paused here by a completed migration (its take-over unconfirmed) ends:
 * `taken` (the new node answered with the VM: it runs there), `not-taken` (a definite no: 404,
 * no such move there, or 502, its take-over failed and rolled back), `gone` (no longer paused
 * here by this move: resumed on the controller's word, set aside, or its QEMU ended), `stopped`
 * (this agent stops: the next one asks on).
 */
export type LaterWord =
  | { kind: 'taken'; vm: VmRecord }
  | { kind: 'not-taken'; reason: string }
  | { kind: 'gone' }
  | { kind: 'stopped' };

export interface AskUntilAnswered {
  /** The new node's `done`, once. */
  ask: () => Promise<VmRecord>;
  /** Whether the guest is still paused here by this move (asked before each ask). */
  stillPaused: () => Promise<boolean>;
  /** Waits ms on the agent's clock (injected in tests). */
  sleep: (ms: number) => Promise<void>;
  /** The agent's clock, ms. */
  nowMs: () => number;
  /** Whether the agent stops (the asking ends, the record stays for the next agent). */
  stopping: () => boolean;
  /** Told the waiting goes on: at most once a WAITING_LOG_EVERY_MS. */
  waiting: (forMs: number, attempts: number, reason: string) => void;
  /** Whether the move's grant has expired: the new node refuses it from then on. */
  grantExpired: () => boolean;
  /** Told the first time the grant is found expired (asked no more): the asks made till then. */
  askingEnds: (attempts: number) => void;
}

/**
 * Asks the new node, until it answers for sure, whether it took the guest over: every 5 s at
 * first, backing off to every 30 s, for as long as the guest stays paused here. Silence, a
 * refused connection (its agent down: restarted, it takes the guest over if its QEMU received it
 * whole) and any other answer say nothing of the guest: the asking goes on, the guest paused.
 * Once the move's grant has expired the new node would refuse every ask: it is asked no more,
 * and the guest stays paused here (still watched: `gone` once the controller or an operator
 * settles it) rather than run on a guess.
 */
export async function askUntilAnswered(how: AskUntilAnswered): Promise<LaterWord> {
  const since = how.nowMs();
  let loggedAt = since;
  let pauseMs = ASK_AGAIN_FIRST_MS;
  let asks = 0;
  let toldExpired = false;
  for (;;) {
    if (how.stopping()) return { kind: 'stopped' };
    if (!(await how.stillPaused())) return { kind: 'gone' };
    // Judged at each pass: a wall clock stepped forward for a while does not end the asking.
    if (how.grantExpired()) {
      if (!toldExpired) how.askingEnds(asks);
      toldExpired = true;
      await how.sleep(ASK_AGAIN_MAX_MS);
      continue;
    }
    asks += 1;
    try {
      return { kind: 'taken', vm: await how.ask() };
    } catch (error) {
      const reason = messageOf(error);
      if (error instanceof PeerCallError && (error.status === 404 || error.status === 502)) {
        return { kind: 'not-taken', reason };
      }
      const now = how.nowMs();
      if (now - loggedAt >= WAITING_LOG_EVERY_MS) {
        loggedAt = now;
        how.waiting(now - since, asks, reason);
      }
    }
    await how.sleep(pauseMs);
    pauseMs = Math.min(pauseMs * 2, ASK_AGAIN_MAX_MS);
  }
}
