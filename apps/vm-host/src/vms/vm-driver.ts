import type { HostPort } from '@app/fleet-domain';

/** A VM as the agent asks a hypervisor for it: the vm_id the agent made and validated numbers. */
export interface VmSpec {
  vmId: string;
  vmType: string;
  ramMb: number;
  vcpuCount: number;
}

/**
 * The driver's own part of a VM's sidecar (QEMU: its pid and acceleration). The service
 * stores it and hands it back; only the driver whose `kind` it names reads inside.
 */
export type DriverRecord = { kind: string } & Record<string, unknown>;

/** How a driver will run a VM it agreed to make, before the VM is accepted. */
export interface VmPlan {
  record: DriverRecord;
  /** For the "accepted" log line, e.g. `tcg`. */
  summary: string;
}

/** A VM the driver made and started. */
export interface StartedVm {
  record: DriverRecord;
  hostPorts: HostPort[];
  /** For the "started" log line, e.g. `QEMU pid 4242, tcg, ssh on 10.8.0.21:40022`. */
  summary: string;
}

/**
 * Whether a started VM runs: `unknown` when its process lives but does not answer (yet),
 * `stopped` when it is gone or halted.
 */
export type VmRunState = 'running' | 'stopped' | 'unknown';

/**
 * The hypervisor under the agent (QemuDriver). VmsService keeps the sidecar and the VM states;
 * a driver makes, watches and stops one VM, with files of its own under the VM's run folder.
 */
export abstract class VmDriver {
  /** Throws, saying why, when VM_DISK_DIR cannot hold this driver's files; checked at start-up. */
  abstract checkDiskDir(): void;

  /** Warns once at start-up about what would make every create fail. */
  abstract checkTools(): Promise<void>;

  /**
   * Called before a VM is accepted: throws a domain error (BaseImageMissingError) when no VM
   * can be made now, so the caller hears it at once and nothing is left behind.
   */
  abstract plan(options: { preferKvm: boolean }): Promise<VmPlan>;

  /** Makes and starts the VM (disk, seed, process); throws VmCreateError naming the step that failed. */
  abstract create(spec: VmSpec, record: DriverRecord): Promise<StartedVm>;

  abstract inspect(vmId: string, record: DriverRecord): Promise<VmRunState>;

  /** Stops the VM if it runs; resolves once it is gone. */
  abstract stop(vmId: string, record: DriverRecord): Promise<void>;
}
