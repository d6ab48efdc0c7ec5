/**
 * Copies a VM's disk into new qcow2 files, bound by vms.module.ts to the node's hypervisor
 * (QemuCopier); the backups service keeps the chains, a test stands in with files of its own.
 */
export abstract class VmCopier {
  /**
   * Before a copy of the running VM: clears what a copy cut short left in its hypervisor, and
   * says why the next copy must be full (null: it can add to the chain `bitmap` names).
   * Throws VmCopyUnavailableError when the running VM cannot be copied at all.
   */
  abstract prepareRunning(vmId: string, bitmap: string | null): Promise<string | null>;

  /** A full copy of the running VM into `target` (a new file), `bitmap` tracking from then on. */
  abstract copyRunningFull(vmId: string, target: string, bitmap: string): Promise<void>;

  /**
   * The running VM's changes since its chain's last copy into `target`, a new file whose
   * backing is `backing` (its name in the same folder).
   */
  abstract copyRunningIncremental(
    vmId: string,
    target: string,
    backing: string,
    bitmap: string,
  ): Promise<void>;

  /**
   * A full copy of the stopped VM's disk into `target`, and `bitmap` added to its disk, so its
   * next copy once it runs again adds to this one.
   */
  abstract copyStopped(vmId: string, target: string, bitmap: string): Promise<void>;

  /**
   * Throws, saying why, when `file` is not a sound qcow2 image whose backing is exactly
   * `backing` (a file of the same folder, by its name; null: none) with no external data file,
   * or is a symbolic link: a file's own header must never make the agent read a file it names
   * (another VM's disk, /etc/shadow, a device), as a copy's sender chose it. Its chain is opened.
   */
  abstract check(file: string, backing: string | null): Promise<void>;

  /** For a chain's manifest: the tool that reads it (name and version), the disk's size. */
  abstract describe(file: string): Promise<{ tool: string; virtualSizeBytes: number | null }>;

  /**
   * The whole disk `file` (a chain's file, read with every file before it) into `target`, a new
   * standalone qcow2 file: what a restore boots.
   */
  abstract convert(file: string, target: string): Promise<void>;
}
