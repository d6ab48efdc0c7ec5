import { CREATE_DISPATCH_DEADLINE_MS } from '@app/fleet-domain';

/**
 * The most a keyed create waits for another controller's create with its Idempotency-Key
 * (whose claim a live holder ends within CREATE_DISPATCH_DEADLINE_MS and a dead one's within
 * 25 s): past it, a 503 asks the client to retry with the same key.
 */
export const KEY_CLAIM_WAIT_MS = 30_000;

/** How long a create may take; a provider so tests can shorten it. */
export class VmCreateSettings {
  /** Every node a create tries, all within this (real time). */
  dispatchDeadlineMs = CREATE_DISPATCH_DEADLINE_MS;
  /** The most a keyed create waits for another create's claim on its key to end. */
  keyClaimWaitMs = KEY_CLAIM_WAIT_MS;
  /** A create without `copies` gets these (VM_FLEET_COPIES, VM_FLEET_COPY_EVERY_S). */
  copies: { count: number; every_s: number } = { count: 1, every_s: 60 };
}
