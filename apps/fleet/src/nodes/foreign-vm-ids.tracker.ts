/** An episode ends once the node has not listed the other node's VM id for this long. */
export const FOREIGN_VM_EPISODE_QUIET_MS = 60_000;

/** Episodes tracked at most (a node listing random ids must not grow this without bound). */
const EPISODES_KEPT = 4096;

/**
 * Which nodes list VM ids that other nodes hold, so the controller warns once per episode (not
 * at every heartbeat) and counts each episode once: one begins when a node lists another's VM
 * id, and ends once it has not for FOREIGN_VM_EPISODE_QUIET_MS.
 */
export class ForeignVmIds {
  /** `<claimer>\n<vm id>` → when it was last listed (controller clock, ms). */
  private readonly lastListedMs = new Map<string, number>();

  /** Notes that `claimer` listed `vmId` at `nowMs`; true when this begins an episode. */
  note(claimer: string, vmId: string, nowMs: number): boolean {
    const key = `${claimer}\n${vmId}`;
    const last = this.lastListedMs.get(key);
    this.lastListedMs.delete(key);
    this.lastListedMs.set(key, nowMs);
    if (this.lastListedMs.size > EPISODES_KEPT) {
      const oldest = this.lastListedMs.keys().next().value;
      if (oldest !== undefined) this.lastListedMs.delete(oldest);
    }
    return last === undefined || nowMs - last > FOREIGN_VM_EPISODE_QUIET_MS;
  }
}
