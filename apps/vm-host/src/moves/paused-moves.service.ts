import {
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
  Optional,
} from '@nestjs/common';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Clock, grantExpiryOf } from '@app/daemon';
import { VmRecord } from '@app/fleet-domain';
import { CopyLocks } from '../vms/copies/copy-locks';
import { PeerTarget, PeerTransport, Throttle, splitAddress } from '../vms/copies/peer-transport';
import { HostMetrics } from '../metrics/host-metrics.service';
import { moveHoldPath } from '../vms/files/move-hold';
import { PRIVATE_FILE_MODE, VmFiles } from '../vms/files/vm-files';
import { VmLifeCycles } from '../vms/life-cycle/vm-life-cycles';
import { COPY_QMP_SOCKET } from '../vms/qemu/qemu-command-line';
import { withQmp } from '../vms/qemu/qmp.client';
import { MeshPorts } from '../vms/ports/mesh-ports';
import { VmDriver } from '../vms/vm-driver';
import { VmsService } from '../vms/vms.service';
import { messageOf } from '../vms/vms.errors';
import { LaterWord, askUntilAnswered } from './move-settle-later';
import { MovesResumeService } from './moves-resume.service';

const QMP_TIMEOUT_MS = 10_000;
/** Past the grant's expiry, before it is taken as refused: the new node's clock may be behind. */
export const GRANT_EXPIRY_GRACE_MS = 60_000;

interface UnconfirmedMove {
  node_id: string;
  address: string;
  grant: string;
  since: string;
}

/**
 * Guests left paused here by a live move whose migration completed while the new node never
 * said whether it took them over (settleTakeOver `unanswered`): the new node asked again in the
 * background (askUntilAnswered) for as long as the guest stays paused by the move. Its word
 * `taken`: the paused QEMU stopped and the VM's disk and files set aside (it runs there); a
 * definite no: the guest runs here again. Never on silence nor a refused connection. Recorded in
 * the VM's run folder, so a restarted agent asks on. Taken, its ports are handed to the routing
 * mesh at once (forwarded to the new node), as after a move confirmed in time. Its grant expired
 * (the new node refuses it then), the new node is asked no more: the guest stays paused here.
 */
@Injectable()
export class PausedMoves implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Moves');
  private readonly peers = new PeerTransport(new Throttle(0));
  private readonly asking = new Set<string>();
  private stopping = false;
  /** Waits between two asks (a unit test shortens it). */
  sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

  constructor(
    private readonly files: VmFiles,
    private readonly lifecycle: VmLifeCycles,
    private readonly copyLocks: CopyLocks,
    private readonly vms: VmsService,
    private readonly resumes: MovesResumeService,
    private readonly driver: VmDriver,
    private readonly clock: Clock,
    private readonly metrics: HostMetrics,
    @Optional() private readonly meshPorts?: MeshPorts,
  ) {}

  /** The moves a killed agent left unconfirmed: asked on. */
  async onApplicationBootstrap(): Promise<void> {
    for (const vmId of await this.files.listVmIds()) {
      const move = await this.recordOf(vmId);
      if (move) this.askOn(vmId, move);
    }
  }

  onModuleDestroy(): void {
    this.stopping = true;
  }

  /** Vm ids whose move is unconfirmed, the guest paused here: asked about, or its grant expired. */
  unconfirmed(): string[] {
    return [...this.asking];
  }

  /**
   * Records the unconfirmed move (the VM held, see move-hold.ts), then asks the new node in the
   * background. Never throws: unrecorded (VM_DISK_DIR unwritable), the guest stays paused,
   * for the controller's move-resume or an operator.
   */
  async watch(vmId: string, peer: PeerTarget): Promise<void> {
    const move = await this.hold(vmId, peer);
    if (move) this.askOn(vmId, move);
  }

  /**
   * Records the move as unconfirmed (the VM held, see move-hold.ts) without asking yet: from the
   * moment its migration completed, an agent killed or a host rebooted before the new node's
   * word asks on at start and never starts the guest again here. Undefined: not recorded.
   */
  async hold(vmId: string, peer: PeerTarget): Promise<UnconfirmedMove | undefined> {
    const move: UnconfirmedMove = {
      node_id: peer.nodeId,
      address: peer.address,
      grant: peer.grant,
      since: new Date(this.clock.wallNow()).toISOString(),
    };
    const path = this.recordPath(vmId);
    try {
      await writeFile(`${path}.partial`, JSON.stringify(move), { mode: PRIVATE_FILE_MODE });
      await rename(`${path}.partial`, path);
    } catch (error) {
      this.logger.error(
        `vm ${vmId}: its unconfirmed move to node ${peer.nodeId} not recorded (${messageOf(error)}): node ${peer.nodeId} not asked on, the guest stays paused here`,
      );
      return undefined;
    }
    return move;
  }

  /** The move settled in the foreground (taken, or resumed on the new node's word): no hold. */
  async release(vmId: string): Promise<void> {
    await rm(this.recordPath(vmId), { force: true }).catch((error: unknown) =>
      this.logger.error(`vm ${vmId}: its move's hold not removed: ${messageOf(error)}`),
    );
  }

  private askOn(vmId: string, move: UnconfirmedMove): void {
    if (this.asking.has(vmId)) return;
    this.asking.add(vmId);
    this.metrics.observeUnconfirmedMoves(this.asking.size);
    const peer: PeerTarget = { nodeId: move.node_id, address: move.address, grant: move.grant };
    // The new node refuses the grant once expired on its own clock: a grace for clocks apart.
    const expiresAtMs = grantExpiryOf(move.grant);
    const grantExpired = () =>
      expiresAtMs !== undefined && this.clock.wallNow() >= expiresAtMs + GRANT_EXPIRY_GRACE_MS;
    if (!grantExpired()) {
      this.logger.warn(
        `vm ${vmId}: its move to node ${peer.nodeId} is unconfirmed (since ${move.since}): the guest stays paused here while node ${peer.nodeId} is asked whether it took it over`,
      );
    }
    void askUntilAnswered({
      ask: () =>
        this.peers.call(peer, 'POST', `/v1/moves/${vmId}/incoming/done`) as Promise<VmRecord>,
      stillPaused: () => this.pausedByMove(vmId),
      sleep: (ms) => this.sleep(ms),
      nowMs: () => this.clock.now(),
      stopping: () => this.stopping,
      waiting: (forMs, attempts, reason) =>
        this.logger.warn(
          `vm ${vmId}: node ${peer.nodeId} still gives no word on the take-over after ${Math.round(forMs / 1000)} s (${attempts} asks, last: ${reason}); the guest stays paused here`,
        ),
      grantExpired,
      askingEnds: (attempts) =>
        this.logger.error(
          `vm ${vmId}: its move to node ${peer.nodeId} (unconfirmed since ${move.since}) has a move grant that expired at ${new Date(expiresAtMs!).toISOString()}, with no word on the take-over (${attempts} asks by this agent): node ${peer.nodeId} is asked no more (it refuses the grant); the guest stays paused here until the controller settles the move (superseded, or move-resume)`,
        ),
    })
      .then((word) => this.settle(vmId, peer, word))
      .catch((error: unknown) =>
        this.logger.error(`vm ${vmId}: its unconfirmed move not settled: ${messageOf(error)}`),
      )
      .finally(() => {
        this.asking.delete(vmId);
        this.metrics.observeUnconfirmedMoves(this.asking.size);
      });
  }

  private async settle(vmId: string, peer: PeerTarget, word: LaterWord): Promise<void> {
    if (word.kind === 'stopped') return;
    if (word.kind === 'gone') {
      this.logger.log(`vm ${vmId}: no longer paused here by its move to node ${peer.nodeId}`);
    } else if (word.kind === 'taken') {
      this.logger.warn(
        `vm ${vmId}: node ${peer.nodeId} says it took the guest over and runs it: its paused QEMU here stopped, its disk and files set aside`,
      );
      // Its ports, read before its files are set aside: the mesh forwards them to the new node
      // at once, as after a move confirmed in time (MovesOutService.moveLive). An unreadable
      // sidecar does not keep the guest's QEMU here: the mesh learns from the controller's table.
      const forwards = await this.files.readSidecar(vmId).then(
        (sidecar) => sidecar?.forwards ?? [],
        (error: unknown) => {
          this.logger.error(
            `vm ${vmId}: its ports not handed to node ${peer.nodeId} at once (${messageOf(error)}); the mesh forwards them once the controller's table lists it there`,
          );
          return [];
        },
      );
      await this.vms.supersede([vmId], `its move to node ${peer.nodeId} confirmed late`);
      const to = { nodeId: peer.nodeId, wgIp: splitAddress(peer.address).host };
      await this.meshPorts?.movedOut(vmId, forwards, to);
    } else {
      this.logger.warn(
        `vm ${vmId}: node ${peer.nodeId} says it did not take the guest over (${word.reason}); the guest runs here again`,
      );
      await this.resumes.resume(vmId);
    }
    await rm(this.recordPath(vmId), { force: true });
  }

  /**
   * Whether the VM is still held here by its move: its record kept, and its QEMU paused by the
   * completed migration (QEMU's `postmigrate`) or ended meanwhile (a reboot: not started again
   * while held, see move-hold.ts); not once it runs (resumed on the controller's word).
   */
  private async pausedByMove(vmId: string): Promise<boolean> {
    if (!(await this.recordOf(vmId))) return false;
    const socket = join(this.files.runDir(vmId), COPY_QMP_SOCKET);
    return this.copyLocks.run(vmId, () =>
      this.lifecycle.locks.run(vmId, async () => {
        if (!(await this.driver.find([vmId])).has(vmId)) return true;
        // A QMP slow to answer says nothing: asked on.
        return withQmp(socket, QMP_TIMEOUT_MS, async (qmp) => {
          const status = (await qmp.execute('query-status')) as { status?: string };
          return status.status === 'postmigrate';
        }).catch(() => true);
      }),
    );
  }

  private async recordOf(vmId: string): Promise<UnconfirmedMove | undefined> {
    try {
      const move = JSON.parse(await readFile(this.recordPath(vmId), 'utf8')) as UnconfirmedMove;
      const valid =
        typeof move.node_id === 'string' &&
        typeof move.address === 'string' &&
        typeof move.grant === 'string' &&
        typeof move.since === 'string';
      return valid ? move : undefined;
    } catch {
      return undefined;
    }
  }

  /** Private (it holds the move's grant), in the VM's run folder: see move-hold.ts. */
  private recordPath(vmId: string): string {
    return moveHoldPath(this.files, vmId);
  }
}
