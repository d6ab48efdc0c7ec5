import { inCrashLoop, ranSteadily, restartDelayMs } from '@app/fleet-domain';

/** What the agent knows of a VM's unasked-for exits and its starts since, in this process. */
export interface RestartTrack {
  /** Exits and failed starts in a row since the VM last ran steadily or an operator acted. */
  failures: number;
  /** Why the last start failed, or why the VM is not running as asked; null when it runs. */
  reason: string | null;
  /** When the next start is due (Clock.now()); null when none is planned. */
  nextStartAtMs: number | null;
  /** When it was last started here (Clock.now()); null before. */
  startedAtMs: number | null;
  /** Its process was ended by fencing (not its own failure): its next start is an unfence's. */
  fenced: boolean;
}

const NONE: Readonly<RestartTrack> = {
  failures: 0,
  reason: null,
  nextStartAtMs: null,
  startedAtMs: null,
  fenced: false,
};

/**
 * The restart policy's memory: each VM's failures in a row and its next start, by vm id. Kept
 * in memory on purpose: an agent started again (after a reboot) starts every VM that should run
 * at once, paced, rather than wait out a backoff that a power cut earned. The times are on the
 * agent's Clock, passed in.
 */
export class VmRestarts {
  private readonly tracks = new Map<string, RestartTrack>();

  of(vmId: string): Readonly<RestartTrack> {
    return this.tracks.get(vmId) ?? NONE;
  }

  /** True while a start is planned for the VM. */
  planned(vmId: string): boolean {
    return this.of(vmId).nextStartAtMs !== null;
  }

  /** True once the planned start's time has come. */
  due(vmId: string, nowMs: number): boolean {
    const next = this.of(vmId).nextStartAtMs;
    return next !== null && nowMs >= next;
  }

  crashLooping(vmId: string): boolean {
    return inCrashLoop(this.of(vmId).failures);
  }

  /**
   * The VM's process ended without an operator asking. `counts`: a crash (backoff grows); not
   * for a VM found without a process when the agent starts (a reboot is not the VM's failure),
   * which is started at once.
   */
  exited(vmId: string, why: string, nowMs: number, counts: boolean): void {
    const track = { ...this.of(vmId), fenced: false };
    if (counts) track.failures += 1;
    track.reason = why;
    track.nextStartAtMs = nowMs + restartDelayMs(counts ? track.failures : 0);
    this.tracks.set(vmId, track);
  }

  /**
   * Fencing ended the VM (its node's lease ran out): not its failure, so no backoff and no
   * failure counted; its next start, once unfenced, is due at once and counted `unfenced`.
   */
  fenced(vmId: string, why: string, nowMs: number): void {
    this.exited(vmId, why, nowMs, false);
    this.tracks.set(vmId, { ...this.of(vmId), fenced: true });
  }

  /** A start failed (or was refused): tried again after the backoff. */
  startFailed(vmId: string, why: string, nowMs: number): void {
    const track = { ...this.of(vmId) };
    track.failures += 1;
    track.reason = why;
    track.nextStartAtMs = nowMs + restartDelayMs(track.failures);
    this.tracks.set(vmId, track);
  }

  started(vmId: string, nowMs: number): void {
    const track = {
      ...this.of(vmId),
      reason: null,
      nextStartAtMs: null,
      startedAtMs: nowMs,
      fenced: false,
    };
    this.tracks.set(vmId, track);
  }

  /** Forgets the failures of a VM that has run steadily since its last start. */
  notice(vmId: string, nowMs: number): void {
    const track = this.tracks.get(vmId);
    if (track?.startedAtMs != null && track.failures > 0 && ranSteadily(track.startedAtMs, nowMs)) {
      this.tracks.set(vmId, { ...track, failures: 0 });
    }
  }

  /** An operator stopped, started or deleted the VM: the policy starts over. */
  forget(vmId: string): void {
    this.tracks.delete(vmId);
  }
}
