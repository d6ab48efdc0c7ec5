import { HYPERVISOR_OVERHEAD_MB, type HostPort, type VmAccel } from '@app/fleet-domain';

/** A VM as the agent asks a hypervisor for it: the vm_id the agent made and validated numbers. */
export interface VmSpec {
  vmId: string;
  vmType: string;
  ramMb: number;
  vcpuCount: number;
  /**
   * Exactly the forwards to start it with (SSH first), fixed at its admission; absent for a VM
   * admitted before published ports (its SSH port kept where free, see `start`).
   */
  forwards?: readonly HostPort[];
  /** Its disk's virtual size in GiB, as the create asked; absent: the base image's size. */
  diskGb?: number;
  /**
   * Its disk was restored from a copy (already in place): making its files never makes the
   * disk again, and fails when it is missing.
   */
  restoredDisk?: boolean;
}

/**
 * The driver's own part of a VM's sidecar (e.g. a process id). The agent stores it and hands
 * it back; only the driver whose `kind` it names reads inside.
 */
export type DriverRecord = { kind: string } & Record<string, unknown>;

/** How a driver will run a VM it agreed to make, before the VM is accepted. */
export interface VmPlan {
  record: DriverRecord;
  /** For the "accepted" log line, e.g. how the VM will be run. */
  summary: string;
}

/** A VM the driver made and started. */
export interface StartedVm {
  record: DriverRecord;
  hostPorts: HostPort[];
  /** For the "started" log line: what runs the VM and where it is reached. */
  summary: string;
  /** When the VM runs under another accelerator than it was started for (KVM failed): why. */
  accelFallback?: string;
}

/** A VM process the driver found alive on the host. */
export interface FoundVm {
  /** The record naming that process, for the sidecar to adopt. */
  record: DriverRecord;
  /** The ports it forwards, as it was started with them. */
  hostPorts: HostPort[];
  /** Its resident memory now, in MiB. */
  rssMb: number;
  /**
   * The RAM (MiB) and vCPUs the process was started with, when the driver can tell: what the VM
   * holds when its sidecar cannot be read.
   */
  ramMb?: number;
  vcpuCount?: number;
  /** For the "adopted" log line: the process found. */
  summary: string;
}

/**
 * Whether a started VM runs: `unknown` when its process lives but does not answer (yet),
 * `stopped` when it is gone or halted, `io-error` when its process lives but the hypervisor
 * paused it because a write to its disk failed (a full VM_DISK_DIR).
 */
export type VmRunState = 'running' | 'stopped' | 'unknown' | 'io-error';

/**
 * The hypervisor under the agent, chosen in vm-driver.provider.ts. The agent keeps each VM's
 * sidecar and state; a driver makes, watches and stops one VM, with files of its own under the
 * VM's run folder.
 */
export abstract class VmDriver {
  /** Throws, saying why, when VM_DISK_DIR cannot hold this driver's files; checked at start-up. */
  abstract checkDiskDir(): void;

  /** Warns once at start-up about what would make every create fail. */
  abstract checkTools(): Promise<void>;

  /**
   * Called before a VM is accepted: throws VmCreationUnavailableError when no VM can be made
   * now, so the caller hears it at once and nothing is left behind.
   */
  abstract plan(options: { preferKvm: boolean }): Promise<VmPlan>;

  /**
   * Makes the VM's files (its disk, what it boots with) before the VM is accepted, so a full or
   * unwritable VM_DISK_DIR is heard at once; throws VmCreateError naming the step, its cause kept.
   */
  abstract makeFiles(spec: VmSpec, record: DriverRecord): Promise<void>;

  /**
   * Starts the VM from its files; throws VmCreateError naming the step that failed. With
   * `spec.forwards`, exactly those (VmPortTakenError naming one that is taken now). Without,
   * SSH alone; `keepPorts`: the host ports it had before (a start after a stop, a crash or a
   * reboot), kept where free.
   */
  abstract start(
    spec: VmSpec,
    record: DriverRecord,
    keepPorts?: readonly HostPort[],
  ): Promise<StartedVm>;

  abstract inspect(vmId: string, record: DriverRecord): Promise<VmRunState>;

  /**
   * The virtual size, in bytes, of the disk a VM gets without disk_gb (the base image's); throws
   * VmCreationUnavailableError when that image cannot be read.
   */
  abstract imageDiskBytes(): Promise<number>;

  /** Resumes a VM the hypervisor paused on an I/O error (`io-error`), its writes tried again. */
  abstract resume(vmId: string, record: DriverRecord): Promise<void>;

  /**
   * Every live process of these VMs on the host, by vm id, found by name in one look whatever
   * their records say (an agent killed before it wrote its record down must still find it).
   */
  abstract find(vmIds: readonly string[]): Promise<Map<string, FoundVm>>;

  /**
   * Stops every process of the VM, the record's and any found by its name; resolves once all
   * are gone, throws VmStillRunningError when one outlives every signal.
   */
  abstract stop(vmId: string, record: DriverRecord): Promise<void>;

  /**
   * Ends every process of the VM at once, with no grace (fencing: its node lost its lease, and
   * another node may start the VM from a copy); its disk stays as the guest left it. A driver
   * that cannot do better stops it.
   */
  kill(vmId: string, record: DriverRecord): Promise<void> {
    return this.stop(vmId, record);
  }

  /**
   * Asks the guest to power down (ACPI) and resolves true once its process is gone within
   * `withinMs`, false when it still runs then (or could not be asked); stops nothing itself.
   */
  abstract powerDown(vmId: string, record: DriverRecord, withinMs: number): Promise<boolean>;

  /** Resets the running VM in place, as a reset button would: same process, guest rebooted. */
  abstract reset(vmId: string, record: DriverRecord): Promise<void>;

  /** The file the VM's serial console is written to during its current boot. */
  abstract consoleLog(vmId: string): string;

  /**
   * The Unix socket the VM's serial port is also on, for one interactive console at a time;
   * undefined for a driver without one. A VM started before it existed has no such socket.
   */
  consoleSocket(_vmId: string): string | undefined {
    return undefined;
  }

  /**
   * Cuts the VM's console log to its last part once it has grown past a bound, so a guest
   * writing to its console without end cannot fill VM_DISK_DIR.
   */
  abstract capConsoleLog(vmId: string): Promise<void>;

  /**
   * The memory (MiB) the VM's hypervisor process takes beside the guest's RAM, as measured for
   * the way `record` runs it: counted in the committed RAM the agent reports and refuses by.
   */
  overheadMb(_record: DriverRecord): number {
    return HYPERVISOR_OVERHEAD_MB;
  }

  /** The hardware acceleration `record` runs the VM under, when the driver has such a notion. */
  accel(_record: DriverRecord): VmAccel | null {
    return null;
  }
}
