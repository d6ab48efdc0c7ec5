import { KVM_CPU_MODELS, KvmCpuModel } from './qemu-command-line';

/**
 * QMP run states in which a guest under KVM will not run again (`internal-error`: KVM could not
 * emulate an instruction, as on nested hosts whose /dev/kvm opens; `guest-panicked`).
 */
export const BROKEN_RUN_STATES: readonly string[] = ['internal-error', 'guest-panicked'];

/**
 * How long a VM's first seconds under KVM are watched, while KVM has not yet run a guest in
 * this agent process: a host whose KVM cannot run guests stops them within seconds (QMP
 * `internal-error` 2-3 s after the start on such a 2-core host when idle, 7-20 s at load 7-12).
 * Ended sooner by the guest's first console output (it ran past its firmware: under a working
 * KVM within about a second) or by the broken state, so only a silent guest (a blank disk) waits
 * it all; a guest that breaks later is caught by inspect (QemuDriver.brokenGuest).
 */
export const KVM_PROBATION_MS = 30_000;
/** How often the QMP status is read during the probation. */
export const KVM_PROBATION_POLL_MS = 200;

/** What a KVM start needs from the driver, so the chain can be tested with fakes. */
export interface KvmStartSteps {
  /** Starts QEMU under KVM with this CPU model; resolves its pid, rejects with QEMU's error. */
  launch(cpuModel: KvmCpuModel): Promise<number>;
  /** The QMP run status of the VM's QEMU (`running`, `internal-error`, ...). */
  status(): Promise<string>;
  /** True once the guest wrote to its serial console in this boot. */
  consoleWritten(): Promise<boolean>;
  alive(pid: number): Promise<boolean>;
  /** Stops the QEMU a launch left (a guest KVM could not run). */
  stop(pid: number): Promise<void>;
}

/** The VM runs under KVM with this CPU model. */
export interface KvmStarted {
  pid: number;
  cpuModel: KvmCpuModel;
}

/** KVM could not run the VM; nothing of it runs. `ranOnce`: it failed after a start. */
export interface KvmFailed {
  failure: string;
  ranOnce: boolean;
}

/** Time, injected so the probation is tested without waiting. */
export interface ProbationClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const REAL_TIME: ProbationClock = {
  now: () => performance.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/**
 * Starts VMs under KVM, one agent process's memory of it: the CPU model chain (KVM_CPU_MODELS)
 * from the first model not known to fail here, and whether KVM has run a guest yet. Until it
 * has, each start is watched for KVM_PROBATION_MS (the VM stays Provisioning meanwhile), so a
 * host whose KVM starts guests but cannot run them is found before a VM is listed Running.
 */
/** What QEMU says when KVM or the CPU model, not the VM, is why it could not start. */
export const KVM_REFUSAL = /\bkvm\b|\bMSR\b|\bCPU\b|cpuid|accelerat/i;

export class KvmStarts {
  /** The first model in KVM_CPU_MODELS worth trying: the ones before it failed to start here. */
  private firstModel = 0;
  /** KVM ran a guest past its probation in this process: later starts are not watched. */
  private proven = false;

  constructor(private readonly clock: ProbationClock = REAL_TIME) {}

  /** Whether KVM has run a guest past its probation in this process. */
  get hasRunAGuest(): boolean {
    return this.proven;
  }

  /** The CPU model later VMs start with first. */
  get cpuModel(): KvmCpuModel {
    return KVM_CPU_MODELS[this.firstModel];
  }

  async start(steps: KvmStartSteps): Promise<KvmStarted | KvmFailed> {
    const errors: string[] = [];
    for (let index = this.firstModel; index < KVM_CPU_MODELS.length; index++) {
      const cpuModel = KVM_CPU_MODELS[index];
      let pid: number;
      try {
        pid = await steps.launch(cpuModel);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        // Only KVM's or the CPU model's refusal moves on to the next model: a start that fails
        // for the VM's own reasons (a port taken, its disk locked, no memory) is that failure.
        if (!KVM_REFUSAL.test(message)) throw error;
        errors.push(`${cpuModel}: ${message}`);
        continue;
      }
      // Models before it fail on this host: not tried again by this process.
      this.firstModel = index;
      const broken = this.proven ? null : await this.probation(pid, steps);
      if (broken === null) return { pid, cpuModel };
      await steps.stop(pid);
      return {
        failure: `stopped under KVM (CPU ${cpuModel}) with QMP status ${broken}`,
        ranOnce: true,
      };
    }
    return { failure: `could not start under KVM: ${errors.join('; ')}`, ranOnce: false };
  }

  /**
   * The broken QMP state the guest went to in its first seconds, or null once it ran: it wrote
   * to its console, or stayed out of a broken state for KVM_PROBATION_MS. Either proves KVM
   * here. A QEMU that ended meanwhile is no verdict on KVM (its state says it stopped).
   */
  private async probation(pid: number, steps: KvmStartSteps): Promise<string | null> {
    const deadline = this.clock.now() + KVM_PROBATION_MS;
    for (;;) {
      const status = await steps.status().catch(() => undefined);
      if (status !== undefined && BROKEN_RUN_STATES.includes(status)) return status;
      if (!(await steps.alive(pid))) return null;
      if ((await steps.consoleWritten()) || this.clock.now() >= deadline) {
        this.proven = true;
        return null;
      }
      await this.clock.sleep(KVM_PROBATION_POLL_MS);
    }
  }
}
