import { readFileSync } from 'node:fs';
import { liveQemusUnder } from './qemu-processes';

/** Looks in /proc this often. */
const LOOK_EVERY_MS = 100;
/** A QEMU whose CPU time grew by this many clock ticks within the last second runs its guest. */
const RUNNING_TICKS_PER_S = 3;
/** Looks in a second. */
const WINDOW_LOOKS = 1_000 / LOOK_EVERY_MS;

/** The CPU time (user + system, clock ticks) of a process, undefined once it is gone. */
function cpuTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is the 3rd, utime the 14th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

/**
 * Which node runs one VM's guest, looked at every 100 ms from outside: a QEMU process of the VM
 * (found in /proc by its `guest=<vm>` name, its node by its folder) runs the guest when its CPU
 * time grew by RUNNING_TICKS_PER_S or more over the last second; a QEMU paused (waiting for a
 * migration, or left in `postmigrate` by one) spends next to none. `bothRunning` counts the
 * looks in which two nodes' QEMUs both ran their guest: a live move's switchover overlaps for
 * under a second of windows, a guest resumed on its old node while its new node runs it for as
 * long as both run. Only meaningful where no migration is under way (see longestBothRunningMs).
 */
export class GuestRunWatch {
  /** Per look, the nodes whose QEMU of the VM ran the guest over the last second. */
  readonly looks: Array<{ at: number; running: string[]; ticks: Record<string, number> }> = [];
  private readonly history = new Map<number, number[]>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly workDir: string,
    private readonly vmId: string,
    private readonly nodeOf: (args: string[]) => string,
  ) {
    this.look();
    this.timer = setInterval(() => this.look(), LOOK_EVERY_MS);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /**
   * The longest run of consecutive looks (from `sinceMs` on) with the guest running on two nodes
   * at once, in ms. Judge it once no migration is under way: a QEMU receiving one (paused) spends
   * CPU on it.
   */
  longestBothRunningMs(sinceMs = 0): number {
    let longest = 0;
    let current = 0;
    for (const { at, running } of this.looks) {
      if (at < sinceMs) continue;
      current = running.length > 1 ? current + 1 : 0;
      longest = Math.max(longest, current);
    }
    return longest * LOOK_EVERY_MS;
  }

  /** The nodes that ran the guest at some look from `sinceMs` on, in order of first seen. */
  nodesRunning(sinceMs = 0): string[] {
    return [
      ...new Set(this.looks.filter(({ at }) => at >= sinceMs).flatMap(({ running }) => running)),
    ];
  }

  /** For a failure's message: the looks where the set of running nodes changed. */
  summary(): string {
    let last = '';
    const lines: string[] = [];
    for (const { at, running, ticks } of this.looks) {
      const now = running.join('+') || 'none';
      if (now === last) continue;
      last = now;
      lines.push(
        `${new Date(at).toISOString()} running: ${now} (ticks/s ${JSON.stringify(ticks)})`,
      );
    }
    return lines.join('\n');
  }

  private look(): void {
    const running: string[] = [];
    const ticks: Record<string, number> = {};
    const seen = liveQemusUnder(this.workDir).filter(({ args }) =>
      args.some((arg) => arg.includes(`guest=${this.vmId}`)),
    );
    const alive = new Set<number>();
    for (const { pid, args } of seen) {
      const now = cpuTicks(pid);
      if (now === undefined) continue;
      alive.add(pid);
      const history = this.history.get(pid) ?? [];
      history.push(now);
      if (history.length > WINDOW_LOOKS + 1) history.shift();
      this.history.set(pid, history);
      const node = this.nodeOf(args);
      const grown = history[history.length - 1] - history[0];
      ticks[node] = (ticks[node] ?? 0) + grown;
      // A window not yet full: a QEMU just started spends CPU on its own start, not a guest's.
      if (history.length > WINDOW_LOOKS && grown >= RUNNING_TICKS_PER_S) running.push(node);
    }
    for (const pid of this.history.keys()) if (!alive.has(pid)) this.history.delete(pid);
    this.looks.push({ at: Date.now(), running: [...new Set(running)], ticks });
  }
}
