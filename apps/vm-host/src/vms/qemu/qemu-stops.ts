import { Logger } from '@nestjs/common';
import { QemuProcesses } from './qemu-processes';
import { withQmp } from './qmp.client';
import { VmStillRunningError } from '../vms.errors';

/** How long one QMP exchange may take. */
export const QMP_TIMEOUT_MS = 2_000;
/** Grace after QMP quit, then again after SIGTERM, before SIGKILL (see QemuStopping). */
export const STOP_GRACE_MS = 1_500;
/** How long a SIGKILLed QEMU may take to be gone (a process in uninterruptible I/O). */
const KILL_GRACE_MS = 5_000;

/** What stopping one VM's QEMU needs of QemuDriver. */
export interface QemuStopping {
  vmId: string;
  qemus: QemuProcesses;
  logger: Logger;
  qmpSocket: string;
  /** Grace after QMP quit, then again after SIGTERM, before SIGKILL. */
  stopGraceMs: number;
}

/**
 * QMP quit, then SIGTERM, then SIGKILL, each after a short grace, to the record's pid and to
 * every QEMU found by the VM's name (one started by an agent killed before it wrote the pid).
 */
export async function stopQemu(
  { vmId, qemus, logger, qmpSocket, stopGraceMs }: QemuStopping,
  pid: number | null,
): Promise<void> {
  const pids = new Set<number>();
  if (pid !== null && (await qemus.isAlive(pid, vmId))) pids.add(pid);
  for (const found of (await qemus.of([vmId])).get(vmId) ?? []) {
    if (!pids.has(found.pid)) {
      logger.warn(`vm ${vmId}: stopping QEMU pid ${found.pid}, found by name`);
      pids.add(found.pid);
    }
  }
  if (pids.size === 0) return;
  let asked = false;
  try {
    await withQmp(qmpSocket, QMP_TIMEOUT_MS, (qmp) => {
      asked = true;
      return qmp.execute('quit');
    });
  } catch {
    // QEMU may close the socket as it quits; the wait below tells. No socket: no grace.
  }
  let alive = asked ? await qemus.survivors([...pids], vmId, stopGraceMs) : [...pids];
  if (alive.length === 0) return;
  for (const survivor of alive) qemus.signal(survivor, 'SIGTERM');
  alive = await qemus.survivors(alive, vmId, stopGraceMs);
  if (alive.length === 0) return;
  logger.warn(`vm ${vmId}: QEMU pid ${alive.join(', ')} ignored quit and SIGTERM; killing it`);
  for (const survivor of alive) qemus.signal(survivor, 'SIGKILL');
  alive = await qemus.survivors(alive, vmId, KILL_GRACE_MS);
  if (alive.length > 0) {
    throw new VmStillRunningError(
      `vm ${vmId}: QEMU pid ${alive.join(', ')} still runs after quit, SIGTERM and SIGKILL; the VM is kept`,
    );
  }
}

/**
 * Asks the guest to power down over QMP (system_powerdown: the ACPI power button), again every
 * powerButtonEveryMs, and waits up to `withinMs` for its QEMU to end, which it does once the
 * guest has shut down.
 */
export async function powerDownQemu(
  { vmId, qemus, logger, qmpSocket }: QemuStopping,
  pid: number | null,
  withinMs: number,
  powerButtonEveryMs: number,
): Promise<boolean> {
  if (pid === null || !(await qemus.isAlive(pid, vmId))) return true;
  const deadline = Date.now() + withinMs;
  let pressed = false;
  let refusal = '';
  for (;;) {
    try {
      // Never past the deadline waiting on QMP either.
      const qmpMs = Math.max(1, Math.min(QMP_TIMEOUT_MS, deadline - Date.now()));
      await withQmp(qmpSocket, qmpMs, (qmp) => qmp.execute('system_powerdown'));
      pressed = true;
    } catch (error) {
      // QMP busy, or QEMU ending: the wait below tells, and the next press tries again.
      refusal = error instanceof Error ? error.message : String(error);
    }
    const waitMs = Math.max(0, Math.min(powerButtonEveryMs, deadline - Date.now()));
    if ((await qemus.survivors([pid], vmId, waitMs)).length === 0) return true;
    if (Date.now() >= deadline) break;
  }
  if (!pressed) logger.warn(`vm ${vmId}: ACPI power-down could not be asked: ${refusal}`);
  return false;
}

/** SIGKILL at once to the record's QEMU and every one found by the VM's name (fencing). */
export async function killQemu(
  { vmId, qemus }: Pick<QemuStopping, 'vmId' | 'qemus'>,
  pid: number | null,
): Promise<void> {
  const pids = new Set((await qemus.of([vmId])).get(vmId)?.map((found) => found.pid) ?? []);
  if (pid !== null && (await qemus.isAlive(pid, vmId))) pids.add(pid);
  for (const each of pids) qemus.signal(each, 'SIGKILL');
  const alive = await qemus.survivors([...pids], vmId, KILL_GRACE_MS);
  if (alive.length > 0) {
    throw new VmStillRunningError(`vm ${vmId}: QEMU pid ${alive.join(', ')} outlived SIGKILL`);
  }
}
