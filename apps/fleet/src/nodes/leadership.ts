/** How often the leadership job campaigns or keeps the leadership it holds. */
export const LEADERSHIP_TICK_MS = 2_000;

/**
 * Whether this controller is the one that does what must happen once in the fleet (the
 * staleness sweep's side effects, recovery). Every controller answers every route regardless.
 * In memory and Redis mode each controller leads itself (SoleLeader), as before leaders.
 */
export abstract class Leadership {
  /** This controller leads now (and its leadership cannot have lapsed by its own clock). */
  abstract isLeader(): boolean;
  /** Campaigns, or keeps the leadership it holds; called every LEADERSHIP_TICK_MS. */
  abstract tick(): Promise<void>;
  /** Gives the leadership up at once (a clean stop), so another takes over without waiting. */
  abstract resign(): Promise<void>;
}

export class SoleLeader extends Leadership {
  isLeader(): boolean {
    return true;
  }
  tick(): Promise<void> {
    return Promise.resolve();
  }
  resign(): Promise<void> {
    return Promise.resolve();
  }
}
