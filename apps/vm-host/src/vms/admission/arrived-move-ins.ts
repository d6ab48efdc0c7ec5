import { Logger } from '@nestjs/common';
import { join } from 'node:path';
import { Clock } from '@app/daemon';
import { HostPort, toRfc3339 } from '@app/fleet-domain';
import { VmFiles } from '../files/vm-files';
import { VmSidecar } from '../files/vm-sidecar';
import { COPY_QMP_SOCKET, hostForwards } from '../qemu/qemu-command-line';
import { QmpSession, withQmp } from '../qemu/qmp.client';
import { FoundVm } from '../vm-driver';
import { messageOf } from '../vms.errors';

const QMP_TIMEOUT_MS = 10_000;
/** The guest's user network, as the VM's QEMU command line names it. */
const NETDEV_ID = 'net0';

/**
 * What an incoming QEMU holds: `arrived` when its migration completed (the whole guest is
 * here), with its run state then (`running` once the killed agent had run it), else `waiting`.
 */
export type IncomingGuest =
  { kind: 'arrived'; run: string } | { kind: 'waiting'; migration: string };

/**
 * The VM's TCP ports given to its QEMU (an incoming QEMU may be started without them, taking
 * them at the take-over): each forward removed if QEMU has it, then added. The ports QEMU could
 * not take.
 */
export async function takeTcpPorts(
  qmp: QmpSession,
  address: string,
  forwards: readonly HostPort[],
): Promise<number[]> {
  const failed: number[] = [];
  for (const forward of forwards.filter(({ protocol }) => protocol === 'tcp')) {
    const rule = hostForwards(address, [forward]).slice('hostfwd='.length);
    const bound = rule.slice(0, rule.lastIndexOf('-'));
    const hmp = (line: string) => qmp.execute('human-monitor-command', { 'command-line': line });
    await hmp(`hostfwd_remove ${NETDEV_ID} ${bound}`).catch(() => undefined);
    // HMP answers an error as text; success is silent.
    const said = await hmp(`hostfwd_add ${NETDEV_ID} ${rule}`).catch(
      (error: Error) => error.message,
    );
    if (typeof said === 'string' && said.trim() !== '') failed.push(forward.host_port);
  }
  return failed;
}

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
    /** This node's mesh address, where the VM's ports are forwarded. */
    private readonly address: string,
  ) {}

  /**
   * True when the guest arrived whole: it runs (run now if it was still paused), its sidecar
   * written complete (the mark dropped, the live QEMU's record). False: rolled back as ever.
   */
  async adopt(sidecar: VmSidecar, live: FoundVm): Promise<boolean> {
    const vmId = sidecar.vm_id;
    const socket = join(this.files.runDir(vmId), COPY_QMP_SOCKET);
    const forwards = sidecar.forwards ?? live.hostPorts;
    let guest: IncomingGuest;
    let failed: number[] = [];
    try {
      guest = await withQmp(socket, QMP_TIMEOUT_MS, async (qmp) => {
        const found = await takeOverArrived(qmp);
        if (found.kind === 'arrived') failed = await takeTcpPorts(qmp, this.address, forwards);
        return found;
      });
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
    sidecar.host_ports = forwards;
    sidecar.started_at = toRfc3339(this.clock.now());
    sidecar.error = null;
    delete sidecar.restoring;
    await this.files.writeSidecar(sidecar);
    this.logger.warn(
      `vm ${vmId}: its live move in was cut short after its QEMU received the whole guest (QEMU ${guest.run}): taken over, it runs here (${live.summary})`,
    );
    if (failed.length > 0) {
      this.logger.error(
        `vm ${vmId}: taken over, but its QEMU could not take ${this.address} port(s) ${failed.join(', ')}/tcp; they answer once the VM restarts`,
      );
    }
    return true;
  }
}
