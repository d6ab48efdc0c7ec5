import { Logger } from '@nestjs/common';
import type { HostPort } from '@app/fleet-domain';
import { StartedVm, VmSpec } from '../vm-driver';
import { VmFiles } from '../files/vm-files';
import { VmPortTakenError } from '../vms.errors';
import { SOCKET_PORT_PROBE, firstTakenPort } from '../ports/port-probe';
import type { KvmCpuModel } from './qemu-command-line';
import { QemuAccel, QemuLaunch, SSH_GUEST_PORT, accelOf, optionOf } from './qemu-command-line';
import { QemuProcesses } from './qemu-processes';
import { QemuRecord, QemuRunFiles, step } from './qemu-record';

/** The source's machine type, accelerator and CPU model a VM moved in live must run with. */
export interface IncomingPin {
  machine: string;
  accel: QemuAccel;
  cpuModel?: KvmCpuModel;
}

/** What launching a VM's QEMU needs of QemuDriver. */
export interface IncomingLaunch {
  wgIp: string;
  files: VmFiles;
  paths: QemuRunFiles;
  launch: (launch: QemuLaunch) => Promise<number>;
}

/**
 * A VM moved in live (apps/vm-host/src/moves/): QEMU on its files as `start` runs it, but on
 * the source's machine type, accelerator and CPU model, waiting paused for its migration, and
 * without its TCP forwards (added at the take-over); `hostPorts` are all of them, checked free.
 */
export async function launchIncoming(
  { wgIp, files, paths, launch }: IncomingLaunch,
  spec: VmSpec,
  pin: IncomingPin,
): Promise<StartedVm> {
  const { vmId } = spec;
  const forwards = spec.forwards ?? [];
  // Its TCP ports are taken at the switchover (MovePortBridge): a paused QEMU holding them
  // would take connections it cannot answer for the whole move. Meanwhile the bridge may hold
  // them: only what QEMU binds now is checked.
  const bound = forwards.filter((forward) => forward.protocol !== 'tcp');
  const taken = await firstTakenPort(wgIp, bound);
  if (taken) throw new VmPortTakenError(taken, wgIp);
  const pid = await step('QEMU', () =>
    launch({
      vmId,
      ramMb: spec.ramMb,
      vcpuCount: spec.vcpuCount,
      accel: pin.accel,
      ...(pin.cpuModel === undefined ? {} : { cpuModel: pin.cpuModel }),
      machine: pin.machine,
      incoming: true,
      disk: files.disk(vmId),
      seedIso: paths.seedIso(vmId),
      qmpSocket: paths.qmpSocket(vmId),
      pidFile: paths.pidFile(vmId),
      serialLog: paths.serialLog(vmId),
      forwardAddress: wgIp,
      forwards: bound,
    }),
  );
  const record: QemuRecord = { kind: 'qemu', accel: pin.accel, pid };
  return { record, hostPorts: [...forwards], summary: `QEMU pid ${pid}, ${pin.accel}, incoming` };
}

/** The accelerator and CPU model a VM's QEMU runs with, from its command line; none: gone. */
export async function runningPinOf(
  qemus: QemuProcesses,
  vmId: string,
): Promise<{ accel: QemuAccel; cpu: string } | undefined> {
  const [first] = (await qemus.of([vmId])).get(vmId) ?? [];
  if (!first) return undefined;
  // Under TCG qemuArgs names no CPU: QEMU's default for x86_64, qemu64.
  return { accel: accelOf(first.args), cpu: optionOf(first.args, '-cpu') ?? 'qemu64' };
}

/** A VM admitted before published ports: SSH from the port it had when still free, else a new one. */
export async function sshForwardOf(
  wgIp: string,
  logger: Logger,
  vmId: string,
  keepPorts: readonly HostPort[],
): Promise<HostPort> {
  const kept = keepPorts.find(
    (port) => port.guest_port === SSH_GUEST_PORT && port.protocol === 'tcp',
  )?.host_port;
  const sshPort = await step('QEMU', async () =>
    kept !== undefined && (await SOCKET_PORT_PROBE.isFree(wgIp, kept, 'tcp'))
      ? kept
      : SOCKET_PORT_PROBE.anyFree(wgIp, 'tcp'),
  );
  if (kept !== undefined && kept !== sshPort) {
    logger.warn(`vm ${vmId}: host port ${kept} is taken now; ssh forwarded from ${sshPort}`);
  }
  return { host_port: sshPort, guest_port: SSH_GUEST_PORT, protocol: 'tcp' };
}
