import type { VmRecord } from '@app/fleet-domain';
import { PeerCallError } from '../vms/copies/peer-transport';
import { messageOf } from '../vms/vms.errors';

/** Times the new node is asked whether it took the guest over, when it does not answer. */
export const SETTLE_ATTEMPTS = 4;
/** The pause between two of those asks (each may itself wait out the peer's timeout). */
export const SETTLE_PAUSE_MS = 5_000;

/** A connection refused: the node's address answers, its agent does not listen. */
const REFUSED = /ECONNREFUSED/;

/**
 * What the new node said of the guest once the old node's migration completed:
 * - `taken`: it runs it (its answer to `done`);
 * - `not-taken`: it said it does not have it and never will (404: no such move there; 502: its
 *   take-over failed and was rolled back), or its agent refused every connection (down, its
 *   QEMU left waiting, rolled back when it starts again), so the guest may run here again;
 * - `unanswered`: no word either way: the guest stays paused here, never resumed, for it may
 *   run there (see MovesInService: a node whose QEMU received the whole guest takes it over).
 */
export type Settled =
  | { kind: 'taken'; vm: VmRecord }
  | { kind: 'not-taken'; reason: string }
  | { kind: 'unanswered'; reason: string };

/**
 * After the source's migration completed: the new node asked (`ask`, its `done`) until it
 * answers for sure. Only a refusal that says it has no guest lets the old node resume its own:
 * a lost answer after a take-over (the mesh cut, its agent restarting) would otherwise leave
 * the guest running on both nodes.
 */
export async function settleTakeOver(
  ask: () => Promise<VmRecord>,
  pause: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  attempts = SETTLE_ATTEMPTS,
): Promise<Settled> {
  let reason = 'not asked';
  let onlyRefused = true;
  for (let attempt = 1; attempt <= attempts; attempt += 1) {
    if (attempt > 1) await pause(SETTLE_PAUSE_MS);
    try {
      return { kind: 'taken', vm: await ask() };
    } catch (error) {
      reason = messageOf(error);
      if (!(error instanceof PeerCallError)) return { kind: 'unanswered', reason };
      if (error.status === 404 || error.status === 502) return { kind: 'not-taken', reason };
      // Any other answer (401 on an expired grant, 409, 5xx of a proxy) says nothing of the guest.
      if (error.status !== 0) return { kind: 'unanswered', reason };
      onlyRefused &&= REFUSED.test(reason);
    }
  }
  // Refused each time: the node answers but its agent is down. Its QEMU runs the guest only once
  // its agent took it over, which that agent would have answered; restarted, it rolls back a
  // move it had not taken over. Silent (the mesh cut, the node down): no word either way.
  return onlyRefused
    ? { kind: 'not-taken', reason: `its agent is down (${reason})` }
    : { kind: 'unanswered', reason };
}
