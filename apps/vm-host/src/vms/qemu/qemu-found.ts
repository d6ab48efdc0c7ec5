import { FoundVm } from '../vm-driver';
import { GuestIsolation } from '../network/guest-isolation';
import { accelOf, forwardedPorts, ramMbOf, vcpuCountOf } from './qemu-command-line';
import { QemuProcesses } from './qemu-processes';
import { QemuRecord } from './qemu-record';

/**
 * QEMU processes whose command line names one of these VMs and its pidfile under VM_DISK_DIR,
 * each (re)enclosed in the guests' cgroup: what their command lines say of each VM.
 */
export async function foundQemus(
  qemus: QemuProcesses,
  guestNetwork: GuestIsolation,
  vmIds: readonly string[],
): Promise<Map<string, FoundVm>> {
  const found = new Map<string, FoundVm>();
  for (const [vmId, processes] of await qemus.of(vmIds)) {
    const [first] = processes;
    await guestNetwork.enclose(
      vmId,
      processes.map(({ pid }) => pid),
    );
    const accel = accelOf(first.args);
    const record: QemuRecord = { kind: 'qemu', accel, pid: first.pid };
    found.set(vmId, {
      record,
      hostPorts: forwardedPorts(first.args),
      rssMb: await qemus.residentMb(processes),
      ramMb: ramMbOf(first.args),
      vcpuCount: vcpuCountOf(first.args),
      summary: `QEMU pid ${processes.map(({ pid }) => pid).join(', ')}, ${accel}`,
    });
  }
  return found;
}
