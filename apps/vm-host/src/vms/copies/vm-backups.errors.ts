/** A backup refused because of the node's or the VM's state: a 409, nothing changed. */
export class VmBackupRefusedError extends Error {
  static off(): VmBackupRefusedError {
    return new VmBackupRefusedError('backups are off on this node (VM_BACKUP_DIR is not set)');
  }
  static underWay(vmId: string): VmBackupRefusedError {
    return new VmBackupRefusedError(`vm ${vmId} is already being backed up`);
  }
  static notSteady(vmId: string, state: string): VmBackupRefusedError {
    return new VmBackupRefusedError(
      `vm ${vmId} is ${state}; only a Running or Stopped VM is backed up`,
    );
  }
  static noCopySocket(vmId: string): VmBackupRefusedError {
    return new VmBackupRefusedError(
      `vm ${vmId} runs in a QEMU started before copies (it has no copy socket); it is backed up once stopped or restarted`,
    );
  }
}
