import { join } from 'node:path';
import { VmFiles } from '../files/vm-files';
import { DriverRecord } from '../vm-driver';
import { VmCreateError } from '../vms.errors';
import { QemuAccel, KvmCpuModel } from './qemu-command-line';

/** A VM's console log past this is cut to its last part (see capConsoleLog). */
export const SERIAL_LOG_MAX_BYTES = 8 * 1024 * 1024;
/** Longest path a unix socket may have on Linux, less its terminating NUL. */
export const MAX_SOCKET_PATH = 107;
/** As long as every vm_id VmFiles makes. */
export const LONGEST_VM_ID = 'vm-0123456789abcdef';

/** What QemuDriver keeps in a VM's sidecar. */
export type QemuRecord = {
  kind: 'qemu';
  accel: QemuAccel;
  /** QEMU's pid once it daemonized; QEMU removes its pidfile on exit, so it is kept here too. */
  pid: number | null;
};

/** The record as stored; a pid that is not a positive integer, or another driver's, is none. */
export function qemuRecord(record: DriverRecord): QemuRecord {
  const { pid } = record;
  const known =
    record.kind === 'qemu' && typeof pid === 'number' && Number.isInteger(pid) && pid > 0;
  return { kind: 'qemu', accel: record.accel === 'kvm' ? 'kvm' : 'tcg', pid: known ? pid : null };
}

/** How a launch ended up running the VM. */
export interface AcceleratedRun {
  pid: number;
  accel: QemuAccel;
  cpuModel?: KvmCpuModel;
  /** When KVM failed and TCG runs it instead: what failed, for the sidecar. */
  accelFallback?: string;
}

/** Runs one create step, so a failure says which step it was. */
export async function step<T>(name: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof VmCreateError) throw error;
    throw new VmCreateError(name, error instanceof Error ? error.message : String(error), {
      cause: error,
    });
  }
}

/** QEMU's files of a VM, all in its run folder. */
export class QemuRunFiles {
  constructor(private readonly files: VmFiles) {}

  qmpSocket(vmId: string): string {
    return join(this.files.runDir(vmId), 'qmp.sock');
  }

  pidFile(vmId: string): string {
    return join(this.files.runDir(vmId), 'qemu.pid');
  }

  seedIso(vmId: string): string {
    return join(this.files.runDir(vmId), 'seed.iso');
  }

  serialLog(vmId: string): string {
    return join(this.files.runDir(vmId), 'serial.log');
  }

  /** The serial log of the boot before the current one, kept for a look after a crash. */
  previousSerialLog(vmId: string): string {
    return join(this.files.runDir(vmId), 'serial.previous.log');
  }
}
