import { Logger } from '@nestjs/common';
import { join } from 'node:path';
import { Clock } from '@app/daemon';
import { toRfc3339 } from '@app/fleet-domain';
import { VmFiles } from '../files/vm-files';
import { VmSidecar } from '../files/vm-sidecar';
import { COPY_QMP_SOCKET } from '../qemu/qemu-command-line';
import { QmpSession, withQmp } from '../qemu/qmp.client';
import { FoundVm } from '../vm-driver';
import { messageOf } from '../vms.errors';

const QMP_TIMEOUT_MS = 10_000;

/**
 * What an incoming QEMU holds: `arrived` when its migration completed (the whole guest is
 * here), with its run state then (`running` once the killed agent had run it), else `waiting`.
 */
export type IncomingGuest =
  { kind: 'arrived'; run: string } | { kind: 'waiting'; migration: string };

/** Asks an incoming QEMU whether the guest arrived whole, and runs it when it did. */
export async function takeOverArrived(qmp: QmpSession): Promise<IncomingGuest> {
  const migration = (await qmp.execute('query-migrate')) as { status?: string };
  if (migration.status !== 'completed') {
    return { kind: 'waiting', migration: migration.status ?? 'none' };
  }
  const status = (await qmp.execute('query-status')) as { status?: string; running?: boolean };
  // The export the old node mirrored into: gone once the killed agent had run the guest.
  await qmp.execute('nbd-server-stop').catch(() => undefined);
  if (!status.running) await qmp.execute('cont');
  return { kind: 'arrived', run: status.status ?? 'unknown' };
}

/**
 * A live move in whose agent was killed after its QEMU received the whole guest, found at the
 * next start (its sidecar still marked restoring, its QEMU alive): the guest is this node's
 * (the old node never resumes it without this node's word that it did not take it, see
 * MovesOutService): taken over and adopted, as `abort` of such a move does, rather than rolled
 * back, which would lose the guest's work here and leave it nowhere. Part of the reconciliation
 * at start-up, so the agent answers its old node's `done` with the VM once it listens.
 */
export class ArrivedMoveIns {
  constructor(
    private readonly files: VmFiles,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /**
   * True when the guest arrived whole: it runs (run now if it was still paused), its sidecar
   * written complete (the mark dropped, the live QEMU's record). False: rolled back as ever.
   */
  async adopt(sidecar: VmSidecar, live: FoundVm): Promise<boolean> {
    const vmId = sidecar.vm_id;
    const socket = join(this.files.runDir(vmId), COPY_QMP_SOCKET);
    let guest: IncomingGuest;
    try {
      guest = await withQmp(socket, QMP_TIMEOUT_MS, takeOverArrived);
    } catch (error) {
      this.logger.warn(
        `vm ${vmId}: its incoming QEMU could not be asked whether the guest arrived (${messageOf(error)})`,
      );
      return false;
    }
    if (guest.kind === 'waiting') {
      this.logger.warn(
        `vm ${vmId}: its live move in was cut short before the whole guest arrived (incoming migration ${guest.migration})`,
      );
      return false;
    }
    sidecar.driver = live.record;
    sidecar.host_ports = live.hostPorts;
    sidecar.started_at = toRfc3339(this.clock.now());
    sidecar.error = null;
    delete sidecar.restoring;
    await this.files.writeSidecar(sidecar);
    this.logger.warn(
      `vm ${vmId}: its live move in was cut short after its QEMU received the whole guest (QEMU ${guest.run}): taken over, it runs here (${live.summary})`,
    );
    return true;
  }
}
