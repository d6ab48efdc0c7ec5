import { Logger } from '@nestjs/common';
import { chmod, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CrashFailpoint } from '../failpoints/crash-failpoint';
import { PRIVATE_FILE_MODE } from '../files/vm-files';
import { COPY_QMP_SOCKET, SERIAL_SOCKET, QemuLaunch, qemuArgs } from './qemu-command-line';
import { GuestIsolation } from '../network/guest-isolation';
import { runTool } from './run-tool';

/** How long QEMU may take to daemonize. */
const LAUNCH_TIMEOUT_MS = 60_000;

/** What a launch needs of QemuDriver besides the launch itself. */
export interface QemuLaunching {
  previousSerialLog: string;
  runDir: string;
  guestNetwork: GuestIsolation;
  failpoint: CrashFailpoint;
  logger: Logger;
}

/**
 * Starts QEMU daemonized; resolves with its pid once it runs in the background. `-daemonize`
 * sets QEMU's umask to 027, so what it creates would be readable by the group: the serial log
 * is made 0600 before (QEMU opens it as it is), the QMP socket made 0600 once it exists (in a
 * 0700 folder meanwhile).
 */
export async function launchQemu(launch: QemuLaunch, runs: QemuLaunching): Promise<number> {
  await rename(launch.serialLog, runs.previousSerialLog).catch(() => undefined);
  await writeFile(launch.serialLog, '', { mode: PRIVATE_FILE_MODE });
  await chmod(launch.serialLog, PRIVATE_FILE_MODE);
  // In the guests' cgroup, whose sockets (the guest's user network) the node's firewall knows.
  const { command, args } = await runs.guestNetwork.guestCommand(
    'qemu-system-x86_64',
    qemuArgs(launch),
  );
  await runTool(command, args, LAUNCH_TIMEOUT_MS, 'qemu-system-x86_64');
  runs.failpoint.reached('after-launch-before-pid-written', launch.vmId);
  const pid = Number((await readFile(launch.pidFile, 'utf8')).trim());
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`unreadable pidfile ${launch.pidFile}`);
  // The copies' and the serial port's sockets too, quietly: the run folder is 0700 anyway.
  for (const socket of [COPY_QMP_SOCKET, SERIAL_SOCKET]) {
    await chmod(join(runs.runDir, socket), PRIVATE_FILE_MODE).catch(() => undefined);
  }
  await chmod(launch.qmpSocket, PRIVATE_FILE_MODE).catch((error: unknown) => {
    // QEMU runs: not a reason to fail the VM; the run folder is 0700 anyway.
    runs.logger.warn(
      `vm ${launch.vmId}: could not make its QMP socket private: ${error instanceof Error ? error.message : String(error)}`,
    );
  });
  return pid;
}
