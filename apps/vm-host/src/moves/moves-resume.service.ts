import { Injectable, Logger } from '@nestjs/common';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { DesiredVmState } from '@app/fleet-domain';
import { CopyLocks } from '../vms/copies/copy-locks';
import { heldByMove, moveHoldPath } from '../vms/files/move-hold';
import { VmFiles } from '../vms/files/vm-files';
import { VmSidecars } from '../vms/files/vm-sidecars';
import { VmLifeCycles } from '../vms/life-cycle/vm-life-cycles';
import { COPY_QMP_SOCKET } from '../vms/qemu/qemu-command-line';
import { withQmp } from '../vms/qemu/qmp.client';
import { VmDriver } from '../vms/vm-driver';
import { VmNotOnNodeError } from '../vms/vms.errors';
import { abandonOnSource } from './move-qmp';
import { MoveConflictError } from './moves.errors';

const RESUME_QMP_TIMEOUT_MS = 30_000;

/**
 * A guest left paused here by a move whose migration completed while the new node never said
 * whether it took it over (see settleTakeOver): once the controller heard from the new node
 * that it rolled the move back (nothing of the guest there), the guest runs here again.
 */
@Injectable()
export class MovesResumeService {
  private readonly logger = new Logger('Moves');

  constructor(
    private readonly sidecars: VmSidecars,
    private readonly files: VmFiles,
    private readonly driver: VmDriver,
    private readonly lifecycle: VmLifeCycles,
    private readonly copyLocks: CopyLocks,
  ) {}

  /**
   * Resolves `resumed`, or `nothing` when no guest is left paused by a move (it runs, it is
   * stopped, it is paused for another reason). Taken under the move's locks: a move still
   * settling here ends first.
   */
  resume(vmId: string): Promise<'resumed' | 'nothing'> {
    return this.copyLocks.run(vmId, () =>
      this.lifecycle.locks.run(vmId, async () => {
        const sidecar = await this.sidecars.of(vmId);
        if (!sidecar || this.sidecars.isStandIn(sidecar)) throw new VmNotOnNodeError(vmId);
        if (sidecar.desired_state !== DesiredVmState.Running) {
          throw new MoveConflictError(`vm ${vmId} is moved out of this node: not resumed`);
        }
        if ((await this.driver.inspect(vmId, sidecar.driver)) !== 'stopped') return 'nothing';
        if (!(await this.driver.find([vmId])).has(vmId)) {
          // Its QEMU ended while the move held it (a reboot): started again from its disk.
          if (!(await heldByMove(this.files, vmId))) return 'nothing';
          await rm(moveHoldPath(this.files, vmId), { force: true });
          this.logger.warn(
            `vm ${vmId}: its new node rolled the move back; no longer held, it starts again here from its disk`,
          );
          return 'resumed';
        }
        const socket = join(this.files.runDir(vmId), COPY_QMP_SOCKET);
        const resumed = await withQmp(socket, RESUME_QMP_TIMEOUT_MS, async (qmp) => {
          const status = (await qmp.execute('query-status')) as { status?: string };
          // Only the pause a completed migration leaves: never one of another cause.
          if (status.status !== 'postmigrate') return false;
          await abandonOnSource(qmp, { evenIfCompleted: true });
          return true;
        });
        if (!resumed) return 'nothing';
        await rm(moveHoldPath(this.files, vmId), { force: true });
        this.logger.warn(
          `vm ${vmId}: the controller says its new node rolled the move back; the guest left paused here runs again`,
        );
        return 'resumed';
      }),
    );
  }
}
