import { Injectable, Logger, Optional } from '@nestjs/common';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  AgentMovedOut,
  CopyPeer,
  DesiredVmState,
  IncomingMove,
  IncomingMoveRequest,
  VmRecord,
} from '@app/fleet-domain';
import { CopyLocks } from '../vms/copies/copy-locks';
import {
  PeerCallError,
  PeerTarget,
  PeerTransport,
  Throttle,
  splitAddress,
} from '../vms/copies/peer-transport';
import { diskNode } from '../vms/copies/qmp-copy';
import { VmCopier } from '../vms/copies/vm-copier';
import { VmFiles } from '../vms/files/vm-files';
import { VmSidecar } from '../vms/files/vm-sidecar';
import { VmSidecars } from '../vms/files/vm-sidecars';
import { VmLifeCycles } from '../vms/life-cycle/vm-life-cycles';
import { MeshPorts } from '../vms/ports/mesh-ports';
import { COPY_QMP_SOCKET } from '../vms/qemu/qemu-command-line';
import { QemuDriver } from '../vms/qemu/qemu.driver';
import { QmpSession, withQmp } from '../vms/qemu/qmp.client';
import { runTool } from '../vms/qemu/run-tool';
import { VmDriver } from '../vms/vm-driver';
import { VmNotOnNodeError, messageOf } from '../vms/vms.errors';
import {
  MOVE_EXPORT,
  abandonOnSource,
  clearMoveLeftovers,
  migrateWithSwitchover,
  mirrorToNbd,
  runningMachine,
} from './move-qmp';
import { hostCpu, incomingRequestOf } from './move-helpers';
import { MoveRelay } from './move-relay';
import { settleTakeOver, stillAwaited } from './move-settle';
import { PausedMoves } from './paused-moves.service';
import { MoveConflictError, MoveFailedError, MoveRefusedError } from './moves.errors';

/** QMP's session of a move stays open for the whole move: silent this long, it is given up. */
const MOVE_QMP_TIMEOUT_MS = 30_000;
/** Times the new node is asked to take the guest over when it does not answer. */
const DONE_ATTEMPTS = 3;
/** How long a cold move's disk may take to send (a 20 GiB disk over a slow mesh). */
const COLD_SEND_TIMEOUT_MS = 60 * 60_000;

/**
 * The node a VM leaves. Live (it runs): the new node awaits it (MovesInService), QEMU mirrors
 * its disk there and migrates it, paused before the switchover so the mirror ends while the guest
 * is stopped; once the new node says the guest runs there, the VM is stopped here for good
 * (desired_state stopped, so nothing starts it again) with its disk kept until the controller,
 * having seen the new node report it, releases it. Cold (stopped): its disk file sent over NBD.
 * Anything failing before the new node runs the VM leaves it running here (QEMU resumes it).
 */
@Injectable()
export class MovesOutService {
  private readonly logger = new Logger('Moves');
  private readonly peers = new PeerTransport(new Throttle(0));

  constructor(
    private readonly sidecars: VmSidecars,
    private readonly files: VmFiles,
    private readonly driver: VmDriver,
    private readonly lifecycle: VmLifeCycles,
    private readonly copyLocks: CopyLocks,
    private readonly copier: VmCopier,
    private readonly paused: PausedMoves,
    @Optional() private readonly meshPorts?: MeshPorts,
  ) {}

  moveOut(vmId: string, to: CopyPeer): Promise<AgentMovedOut> {
    // The copies' lock first (as every copy takes it): no backup or peer copy runs on QEMU's
    // copy socket meanwhile; then the VM's own, so nothing starts, stops or restarts it.
    return this.copyLocks.run(vmId, () =>
      this.lifecycle.locks.run(vmId, () => this.locked(vmId, to)),
    );
  }

  /**
   * After the controller saw the VM's new node report it: its files here removed. Refused while
   * it should run here or its QEMU lives.
   */
  async release(vmId: string): Promise<void> {
    await this.lifecycle.locks.run(vmId, async () => {
      const sidecar = await this.sidecars.of(vmId);
      if (!sidecar) return;
      if (
        sidecar.desired_state !== DesiredVmState.Stopped ||
        this.lifecycle.operationOf(vmId) !== null
      ) {
        throw new MoveConflictError(`vm ${vmId} is not moved out of this node: kept`);
      }
      if ((await this.driver.inspect(vmId, sidecar.driver)) !== 'stopped') {
        throw new MoveConflictError(`vm ${vmId}: its QEMU still runs here: kept`);
      }
      await this.files.removeAll(vmId);
      this.sidecars.forget(vmId);
      this.logger.log(`vm ${vmId}: moved to another node; its disk and files here removed`);
    });
    this.lifecycle.announce();
  }

  private async locked(vmId: string, to: CopyPeer): Promise<AgentMovedOut> {
    const sidecar = await this.sidecars.of(vmId);
    if (!sidecar || this.sidecars.isStandIn(sidecar)) throw new VmNotOnNodeError(vmId);
    if (!(this.driver instanceof QemuDriver)) {
      throw new MoveRefusedError('this node runs no QEMU (VM_DRIVER): its VMs cannot move');
    }
    if (this.lifecycle.owned(vmId) && this.lifecycle.operationOf(vmId) !== null) {
      throw new MoveConflictError(
        `vm ${vmId} is busy (${this.lifecycle.operationOf(vmId)}): move it once that ends`,
      );
    }
    if (sidecar.error !== null) {
      throw new MoveConflictError(`vm ${vmId} is in error (${sidecar.error}): it cannot move`);
    }
    const peer: PeerTarget = { nodeId: to.node_id, address: to.address, grant: to.grant };
    const run = await this.driver.inspect(vmId, sidecar.driver);
    if (run === 'running') return this.live(this.driver, sidecar, peer);
    if (run === 'stopped') return this.cold(sidecar, peer);
    throw new MoveConflictError(
      `vm ${vmId} is neither running nor stopped here (${run}): it cannot move now`,
    );
  }

  private async live(
    driver: QemuDriver,
    sidecar: VmSidecar,
    peer: PeerTarget,
  ): Promise<AgentMovedOut> {
    const vmId = sidecar.vm_id;
    const startedAt = performance.now();
    const pin = await driver.runningPin(vmId);
    if (!pin)
      throw new MoveConflictError(`vm ${vmId}: its QEMU is gone; move it again once stopped`);
    const socket = join(this.files.runDir(vmId), COPY_QMP_SOCKET);
    let answer: { vm: VmRecord; pauseMs: number; bytes: number };
    try {
      answer = await withQmp(socket, MOVE_QMP_TIMEOUT_MS, async (qmp) => {
        await clearMoveLeftovers(qmp);
        const machine = await runningMachine(qmp);
        const disk = await diskNode(qmp, this.files.disk(vmId));
        const cpu = pin.accel === 'kvm' && pin.cpu.startsWith('host') ? await hostCpu() : undefined;
        const where = await this.incoming(peer, vmId, {
          ...incomingRequestOf(sidecar, 'live', disk.virtualSize),
          machine,
          accel: pin.accel,
          cpu: pin.cpu,
          ...(cpu === undefined ? {} : { host_cpu: cpu }),
        });
        return this.switchOver(qmp, disk.node, peer, vmId, where);
      });
    } catch (error) {
      if (error instanceof MoveRefusedError || error instanceof MoveFailedError) throw error;
      throw new MoveFailedError(
        `vm ${vmId}: its move to node ${peer.nodeId} failed, it runs here still: ${messageOf(error)}`,
      );
    }
    // Stopped here for good: the new node runs it. Its disk stays until the controller releases it.
    sidecar.desired_state = DesiredVmState.Stopped;
    await this.files.writeSidecar(sidecar);
    await this.paused.release(vmId);
    await driver.stop(vmId, sidecar.driver).catch((error: unknown) => {
      this.logger.error(
        `vm ${vmId}: its paused QEMU not stopped after the move: ${messageOf(error)}`,
      );
    });
    const to = { nodeId: peer.nodeId, wgIp: splitAddress(peer.address).host };
    await this.meshPorts?.movedOut(vmId, sidecar.forwards ?? [], to);
    const totalMs = Math.round(performance.now() - startedAt);
    this.logger.log(
      `vm ${vmId}: moved live to node ${peer.nodeId} in ${totalMs} ms (guest paused ${answer.pauseMs} ms, ${answer.bytes} bytes sent); stopped here, its disk kept until the controller releases it`,
    );
    return {
      vm: answer.vm,
      mode: 'live',
      pause_ms: answer.pauseMs,
      total_ms: totalMs,
      bytes_sent: answer.bytes,
    };
  }

  /**
   * The mirror, the migration to its pause, the mirror's end, the switchover, then the new node
   * told to run the guest. A failure before the migration completed: the relays closed first
   * (QEMU's requests on a cut mesh fail at once rather than wait on TCP), the migration
   * cancelled and the guest running here again, the new node told to give up. Once it
   * completed, the new node may hold the whole guest (and takes it over): the guest runs here
   * again only on its word that it did not take it (settleTakeOver).
   */
  private async switchOver(
    qmp: QmpSession,
    diskNodeName: string,
    peer: PeerTarget,
    vmId: string,
    where: IncomingMove,
  ): Promise<{ vm: VmRecord; pauseMs: number; bytes: number }> {
    const runDir = this.files.runDir(vmId);
    const relays: MoveRelay[] = [];
    let closedBytes = 0;
    const closeRelays = async () => {
      for (const relay of relays.splice(0)) {
        await relay.close();
        closedBytes += relay.sentBytes;
      }
    };
    const sentBytes = () => relays.reduce((sum, relay) => sum + relay.sentBytes, closedBytes);
    let pausedAtMs = performance.now();
    try {
      if (where.migrate_address === undefined) {
        throw new Error(`node ${peer.nodeId} named no migration address`);
      }
      const nbd = await MoveRelay.open(join(runDir, 'move-nbd'), splitAddress(where.nbd_address));
      relays.push(nbd);
      const migration = await MoveRelay.open(
        join(runDir, 'move-mig'),
        splitAddress(where.migrate_address),
      );
      relays.push(migration);
      await mirrorToNbd(qmp, diskNodeName, nbd.path);
      const awaited = () => stillAwaited(this.peers, peer, vmId);
      const paused = () => (pausedAtMs = performance.now());
      await migrateWithSwitchover(qmp, migration.path, paused, undefined, awaited);
    } catch (error) {
      this.logger.warn(
        `vm ${vmId}: live move to node ${peer.nodeId} failed (${messageOf(error)}); ending it`,
      );
      await closeRelays();
      const bytes = sentBytes();
      const left = await abandonOnSource(qmp).catch((resumeError: unknown) => {
        this.logger.error(
          `vm ${vmId}: could not resume it after the failed move: ${messageOf(resumeError)}`,
        );
        return 'resumed' as const;
      });
      if (left === 'completed') {
        // Completed all the same: the new node may hold the guest whole; settled as below.
        this.logger.warn(
          `vm ${vmId}: its migration to node ${peer.nodeId} completed all the same; not resumed here until node ${peer.nodeId} says whether it took it over`,
        );
      } else {
        // Not awaited: through a cut mesh the call waits out its timeout, and the controller
        // tells the new node too once it hears of the failure.
        void this.abort(peer, vmId);
        throw new MoveFailedError(
          `vm ${vmId}: its move to node ${peer.nodeId} failed after ${bytes} bytes, it runs here still: ${messageOf(error)}`,
        );
      }
    }
    const bytes = sentBytes();
    // Held from now until the new node's word: killed or rebooted meanwhile, never started here.
    await this.paused.hold(vmId, peer);
    try {
      // The relays kept open meanwhile: what QEMU sent may still be on its way to the new node.
      const settled = await settleTakeOver(() => this.doneOnce(peer, vmId));
      if (settled.kind === 'taken') {
        const pauseMs = Math.round(performance.now() - pausedAtMs);
        return { vm: settled.vm, pauseMs, bytes };
      }
      if (settled.kind === 'not-taken') {
        this.logger.warn(
          `vm ${vmId}: node ${peer.nodeId} did not take the guest over (${settled.reason}); resuming it here`,
        );
        await abandonOnSource(qmp, { evenIfCompleted: true });
        await this.paused.release(vmId);
        throw new MoveFailedError(
          `vm ${vmId}: node ${peer.nodeId} could not take it over, it runs here again: ${settled.reason}`,
        );
      }
      this.logger.error(
        `vm ${vmId}: its migration to node ${peer.nodeId} completed but node ${peer.nodeId} did not say it took the guest over (${settled.reason}): left paused here, never resumed (node ${peer.nodeId} runs it once its QEMU received it all); asking node ${peer.nodeId} on in the background`,
      );
      await this.paused.watch(vmId, peer);
      throw new MoveFailedError(
        `vm ${vmId}: its migration to node ${peer.nodeId} completed but node ${peer.nodeId} did not confirm the take-over (${settled.reason}); it is paused here, not resumed`,
      );
    } finally {
      await closeRelays();
    }
  }

  /** The new node told to run the guest, once. */
  private async doneOnce(peer: PeerTarget, vmId: string): Promise<VmRecord> {
    return (await this.peers.call(peer, 'POST', `/v1/moves/${vmId}/incoming/done`)) as VmRecord;
  }

  /**
   * The new node told to run the guest: asked again when no answer came (it may have taken the
   * guest over and its answer been lost: it answers the same again), up to DONE_ATTEMPTS times.
   */
  private async done(peer: PeerTarget, vmId: string): Promise<VmRecord> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.doneOnce(peer, vmId);
      } catch (error) {
        if (!(error instanceof PeerCallError) || error.status !== 0 || attempt >= DONE_ATTEMPTS) {
          throw error;
        }
        this.logger.warn(
          `vm ${vmId}: node ${peer.nodeId} did not answer its take-over (${error.message}); asking again`,
        );
      }
    }
  }

  private async cold(sidecar: VmSidecar, peer: PeerTarget): Promise<AgentMovedOut> {
    const vmId = sidecar.vm_id;
    const startedAt = performance.now();
    const disk = this.files.disk(vmId);
    const { virtualSizeBytes } = await this.copier.describe(disk);
    if (virtualSizeBytes === null)
      throw new MoveConflictError(`vm ${vmId}: its disk cannot be read`);
    const wanted = sidecar.desired_state;
    const where = await this.incoming(peer, vmId, {
      ...incomingRequestOf(sidecar, 'cold', virtualSizeBytes),
      machine: 'q35',
      accel: this.driver.accel(sidecar.driver) ?? 'tcg',
      cpu: 'qemu64',
    });
    let vm: VmRecord;
    try {
      const { host, port } = splitAddress(where.nbd_address);
      const uri = `nbd://${host.includes(':') ? `[${host}]` : host}:${port}/${MOVE_EXPORT}`;
      await runTool(
        'qemu-img',
        ['convert', '-n', '-f', 'qcow2', '-O', 'raw', disk, uri],
        COLD_SEND_TIMEOUT_MS,
      );
      vm = await this.done(peer, vmId);
    } catch (error) {
      await this.abort(peer, vmId);
      throw new MoveFailedError(
        `vm ${vmId}: its move to node ${peer.nodeId} failed, it stays here: ${messageOf(error)}`,
      );
    }
    sidecar.desired_state = DesiredVmState.Stopped;
    await this.files.writeSidecar(sidecar);
    const bytes = await stat(disk).then(
      (found) => found.blocks * 512,
      () => 0,
    );
    const totalMs = Math.round(performance.now() - startedAt);
    this.logger.log(
      `vm ${vmId}: moved cold to node ${peer.nodeId} in ${totalMs} ms (${wanted} there); its disk kept until the controller releases it`,
    );
    return { vm, mode: 'cold', pause_ms: null, total_ms: totalMs, bytes_sent: bytes };
  }

  /** The new node's answer to the incoming move, or its refusal in its own words. */
  private async incoming(
    peer: PeerTarget,
    vmId: string,
    request: IncomingMoveRequest,
  ): Promise<IncomingMove> {
    try {
      return (await this.peers.call(
        peer,
        'POST',
        `/v1/moves/${vmId}/incoming`,
        request,
      )) as IncomingMove;
    } catch (error) {
      if (
        error instanceof PeerCallError &&
        (error.status === 409 || error.status === 422 || error.status === 507)
      ) {
        throw new MoveRefusedError(error.message, error.status === 409 ? 409 : 422);
      }
      throw new MoveFailedError(
        `vm ${vmId}: node ${peer.nodeId} could not be asked to take it: ${messageOf(error)}`,
      );
    }
  }

  private async abort(peer: PeerTarget, vmId: string): Promise<void> {
    await this.peers.call(peer, 'DELETE', `/v1/moves/${vmId}/incoming`).catch((error: unknown) => {
      this.logger.warn(
        `vm ${vmId}: node ${peer.nodeId} not told the move is given up (${messageOf(error)}); it rolls it back after ${30} min`,
      );
    });
  }
}
