import type { VmRecord } from '@app/fleet-domain';
import { PeerCallError, PeerTarget, PeerTransport } from '../vms/copies/peer-transport';
import { messageOf } from '../vms/vms.errors';

/** Times the new node is asked whether it took the guest over, when it does not answer. */
export const SETTLE_ATTEMPTS = 4;
/** The pause between two of those asks (each may itself wait out the peer's timeout). */
export const SETTLE_PAUSE_MS = 5_000;

/**
 * What the new node said of the guest once the old node's migration completed:
 * - `taken`: it runs it (its answer to `done`);
 * - `not-taken`: it said it does not have it and never will (404: no such move there; 502: its
 *   take-over failed and was rolled back), so the guest may run here again;
 * - `unanswered`: no word either way (silence, or its agent refusing connections: killed right
 *   after its QEMU ran the guest, restarted it takes it over, see ArrivedMoveIns): the guest
 *   stays paused here, never resumed, and the new node is asked on (PausedMoves).
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
    }
  }
  // Silent or refused each time: no word either way. A refusal is no "no": its agent may have
  // been killed right after its QEMU ran the guest (`cont`), before it could answer.
  return { kind: 'unanswered', reason };
}

/** How long the new node's agent may take to say it still awaits the guest: it is paused. */
export const AWAITED_WITHIN_MS = 5_000;

/**
 * On the old node, the guest paused before the switchover: the new node's agent still awaits
 * it (GET /v1/moves/{vm_id}/incoming), else throws, so the migration is cancelled and the guest
 * runs here on. Without it, a new node whose agent was killed midway (its QEMU living on) would
 * receive the whole guest with no agent to take it over: the guest paused on both nodes until
 * that agent is back.
 */
export async function stillAwaited(
  peers: PeerTransport,
  peer: PeerTarget,
  vmId: string,
  withinMs = AWAITED_WITHIN_MS,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${withinMs} ms`)), withinMs);
  });
  try {
    await Promise.race([peers.call(peer, 'GET', `/v1/moves/${vmId}/incoming`), late]);
  } catch (error) {
    throw new Error(
      `node ${peer.nodeId} does not say it awaits the guest (${messageOf(error)}): not switched over`,
    );
  } finally {
    clearTimeout(timer);
  }
}
