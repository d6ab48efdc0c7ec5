import { Injectable, Logger } from '@nestjs/common';
import { Clock, MOVE_GRANT_CONTEXT, signCopyGrant } from '@app/daemon';
import {
  MoveVmRequest,
  MovedVm,
  NodeState,
  VmState,
  isLive,
  listedVms,
  liveSince,
  moveSpawnKey,
  placeVm,
  placementCandidate,
  recordDispatchedVm,
  removeVm,
  shownVm,
  toRfc3339,
  vmRecordOf,
} from '@app/fleet-domain';
import { KeyClaims } from '../nodes/key-claims.repository';
import { NodeTokens } from '../nodes/node-tokens';
import { NodesRepository } from '../nodes/nodes.repository';
import { NodeDrains } from '../nodes/node-drains.repository';
import { drainReasons, withDrainReason } from '../nodes/drained-nodes';
import { VmMoves } from '../nodes/vm-moves.repository';
import { VmHostClient } from '../vms/vm-host.client';
import { AgentCallError } from '../vms/agent-calls';
import { PlacementRefusedError } from '../vms/vms.errors';
import { giveBackHold, holdRamOnTarget } from '../vms/target-ram-hold';
import { VmMoveFailedError, VmMoveRefusedError } from './vm-move.errors';
import { askTargetToGiveUp } from './move-target';

/** How long the controller waits for the old node's answer: a whole disk sent, then the memory. */
export const MOVE_AGENT_TIMEOUT_MS = 2 * 60 * 60_000;
/** How long the new node may take to report the VM in a heartbeat after the move. */
export const MOVE_REPORT_WITHIN_MS = 60_000;
const REPORT_POLL_MS = 250;
/** Times the VM's record is taken off its old node and put on its new one, a heartbeat in between. */
const HAND_OVER_ATTEMPTS = 5;

/**
 * POST /v1/vms/{vm_id}/move on the operations listener: the target (named, or chosen by
 * placement among the live nodes but the VM's), the RAM held there as for a create, a move grant
 * for that VM and node (signed with the target's node token, under the move context), the old
 * node's agent asked to move it (it drives the new node's with the grant); once the new node
 * reports it in a heartbeat, the old node's disk released and the move recorded (VmMoves: the old
 * node, should it list the VM again, is told it is superseded).
 */
@Injectable()
export class VmMoveService {
  private readonly logger = new Logger('Move');

  constructor(
    private readonly nodes: NodesRepository,
    private readonly keyClaims: KeyClaims,
    private readonly vmMoves: VmMoves,
    private readonly vmHost: VmHostClient,
    private readonly nodeTokens: NodeTokens,
    private readonly clock: Clock,
    private readonly drains: NodeDrains,
  ) {}

  async move(vmId: string, request: MoveVmRequest): Promise<MovedVm> {
    const claimMs = MOVE_AGENT_TIMEOUT_MS + MOVE_REPORT_WITHIN_MS;
    const claim = await this.keyClaims.claim(`move:${vmId}`, `move:${vmId}`, claimMs);
    if (claim.kind !== 'own') {
      throw new VmMoveRefusedError(409, `vm ${vmId}: another move of it is under way`);
    }
    try {
      return await this.moveClaimed(vmId, request);
    } finally {
      await this.keyClaims.release(claim).catch((error: Error) => {
        this.logger.warn(
          `vm ${vmId}: move claim not released (${error.message}); it ends by itself`,
        );
      });
    }
  }

  private async moveClaimed(vmId: string, request: MoveVmRequest): Promise<MovedVm> {
    const now = this.clock.now();
    const all = await this.nodes.listAll();
    const live = all.filter((node) => isLive(node, liveSince(now)));
    const listed = listedVms(all, liveSince(now)).find(({ vm }) => vm.vm_id === vmId);
    if (!listed) throw new VmMoveRefusedError(404, `vm ${vmId} is not on any node`);
    const { vm, node: source } = listed;
    if (listed.silent_since_wall_ms !== undefined) {
      throw new VmMoveRefusedError(
        409,
        `vm ${vmId}: its node ${source.node_id} is silent: restore it from a copy instead (vm restore)`,
      );
    }
    if (vm.state !== VmState.Running && vm.state !== VmState.Stopped) {
      throw new VmMoveRefusedError(
        409,
        `vm ${vmId} is ${vm.state} on node ${source.node_id}: a move takes a Running or Stopped VM`,
      );
    }
    if (request.to === source.node_id) {
      throw new VmMoveRefusedError(422, `to: vm ${vmId} is on node ${request.to} already`);
    }
    const others = live.filter((node) => node.node_id !== source.node_id);
    if (request.to !== undefined && !others.some((node) => node.node_id === request.to)) {
      throw new VmMoveRefusedError(422, `to: node ${request.to} is not a live node`);
    }
    const drained = await drainReasons(this.drains);
    const placement = placeVm(
      {
        ram_mb: vm.ram_alloc_mb,
        prefer_kvm: false,
        ...(request.to === undefined ? {} : { preferred_node: request.to }),
      },
      others.map((node) => withDrainReason(placementCandidate(node, now), drained)),
    );
    if (placement.kind !== 'placed') {
      throw new PlacementRefusedError(
        placement.kind,
        others.length === 0
          ? `no other live node to move vm ${vmId} to`
          : `vm ${vmId} cannot move: ${placement.message}`,
      );
    }
    const target = others.find((node) => node.node_id === placement.node_id)!;
    const holdId = await this.holdRam(target, vm.ram_alloc_mb, placement.required_free_mb, vmId);
    const token = this.nodeTokens.forAgent(target.node_id, target.credential);
    if ('unusable' in token) {
      await this.giveBack(target, holdId);
      throw new VmMoveRefusedError(
        422,
        `to: node ${target.node_id}'s token cannot be derived here (${token.unusable}): no grant for it`,
      );
    }
    const expiresAtMs = this.clock.wallNow() + MOVE_AGENT_TIMEOUT_MS;
    const grant = signCopyGrant(
      token.token,
      { vm: vmId, source: source.node_id, peer: target.node_id, expiresAtMs },
      MOVE_GRANT_CONTEXT,
    );
    this.logger.log(`vm ${vmId}: moving from node ${source.node_id} to node ${target.node_id}`);
    let moved;
    try {
      moved = await this.askSource(vmId, source, () =>
        this.vmHost.moveOut(
          source,
          vmId,
          {
            to: {
              node_id: target.node_id,
              address: `${target.wg_ip.includes(':') ? `[${target.wg_ip}]` : target.wg_ip}:${target.spawn_port}`,
              grant,
              expires_at: toRfc3339(expiresAtMs),
            },
          },
          MOVE_AGENT_TIMEOUT_MS,
        ),
      );
    } catch (error) {
      if (error instanceof VmMoveFailedError) {
        const word = await askTargetToGiveUp(
          { host: target.wg_ip, port: target.spawn_port },
          vmId,
          grant,
        );
        if (word.kind === 'runs-there') {
          // Its old node's part ended unconfirmed (its agent killed, the mesh cut) after the new
          // node received the whole guest: the VM is the new node's; the old node is told it is
          // superseded (it stops its paused QEMU and sets its disk aside).
          const running = vmRecordOf({ ...vm, state: VmState.Running });
          await this.handOver(vmId, source.node_id, target.node_id, holdId, running);
          await this.recordMove(vmId, target.node_id);
          throw new VmMoveFailedError(
            `vm ${vmId}: its move from node ${source.node_id} ended unconfirmed, but node ${target.node_id} received the whole guest and runs it: it is node ${target.node_id}'s now (node ${source.node_id} sets its copy aside)`,
          );
        }
        if (word.kind === 'rolled-back') {
          // Nothing of the guest there: one its old node left paused (its migration completed,
          // the take-over unconfirmed) may run there again; a guest running there is left as is.
          await this.vmHost.resumeMoved(source, vmId).catch((resumeError: Error) => {
            this.logger.error(
              `vm ${vmId}: node ${source.node_id} not told to resume it after node ${target.node_id} rolled the move back (${resumeError.message})`,
            );
          });
        }
        if (word.kind === 'unknown') {
          this.logger.error(
            `vm ${vmId}: node ${target.node_id} not told the move is given up (${word.detail}); it rolls it back by itself within 30 min`,
          );
        }
      }
      await this.giveBack(target, holdId);
      throw error;
    }
    const record = vmRecordOf({ ...moved.vm, tenant_id: moved.vm.tenant_id ?? vm.tenant_id });
    const answeredAt = this.clock.now();
    await this.handOver(vmId, source.node_id, target.node_id, holdId, record);
    const reported = await this.reportedBy(target.node_id, vmId, answeredAt);
    if (!reported) {
      // The new node runs it (its agent said so) but has not reported it: the old node's disk is
      // kept; the move is recorded, so the old node sets it aside rather than ever running it.
      await this.recordMove(vmId, target.node_id);
      throw new VmMoveFailedError(
        `vm ${vmId}: node ${target.node_id} took it over but did not report it within ${MOVE_REPORT_WITHIN_MS / 1000} s; node ${source.node_id} keeps its disk (set aside when it next hears of the move)`,
      );
    }
    await this.vmHost.releaseMoved(source, vmId).catch((error: Error) => {
      this.logger.warn(
        `vm ${vmId}: node ${source.node_id} did not release its old disk (${error.message}); it sets it aside once told the VM is superseded`,
      );
    });
    await this.recordMove(vmId, target.node_id);
    this.logger.log(
      `vm ${vmId} moved ${moved.mode} from node ${source.node_id} to node ${target.node_id} in ${moved.total_ms} ms${moved.pause_ms === null ? '' : `, guest paused ${moved.pause_ms} ms`}, ${moved.bytes_sent} bytes sent; ports ${record.host_ports.map((port) => `${port.host_port}->${port.guest_port}/${port.protocol}`).join(' ')}`,
    );
    return {
      vm: shownVm(reported, target.node_id),
      from_node_id: source.node_id,
      mode: moved.mode,
      pause_ms: moved.pause_ms,
      total_ms: moved.total_ms,
      bytes_sent: moved.bytes_sent,
    };
  }

  /**
   * The id is the new node's from now on (its heartbeat's listing of it is not foreign, the old
   * node's is): taken off the old node's record, then put on the new one's. A heartbeat of the
   * old node in between lists it there again: taken off again, a few times.
   */
  private async handOver(
    vmId: string,
    from: string,
    to: string,
    holdId: string,
    record: ReturnType<typeof vmRecordOf>,
  ): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.nodes.update(from, removeVm(vmId));
        await this.nodes.update(to, recordDispatchedVm(holdId, record));
        return;
      } catch (error) {
        if (attempt >= HAND_OVER_ATTEMPTS) {
          this.logger.error(
            `vm ${vmId}: runs on node ${to} now but its record not moved there (${(error as Error).message}); node ${to}'s heartbeats list it once node ${from} no longer does`,
          );
          return;
        }
      }
    }
  }

  /** The VM as a heartbeat of `nodeId` received after `sinceMs` lists it, once one does. */
  private async reportedBy(nodeId: string, vmId: string, sinceMs: number) {
    const deadline = sinceMs + MOVE_REPORT_WITHIN_MS;
    for (;;) {
      const node = await this.nodes.findLive(nodeId, liveSince(this.clock.now()));
      const vm = node?.vms.find((candidate) => candidate.vm_id === vmId);
      if (node && vm && node.received_at_ms > sinceMs && vm.state !== VmState.Provisioning) {
        return vm;
      }
      if (this.clock.now() >= deadline) return undefined;
      await new Promise((resolve) => setTimeout(resolve, REPORT_POLL_MS));
    }
  }

  private async recordMove(vmId: string, nodeId: string): Promise<void> {
    await this.vmMoves
      .record(vmId, { nodeId, atWallMs: this.clock.wallNow() })
      .catch((error: Error) =>
        this.logger.error(
          `vm ${vmId}: moved to node ${nodeId} but its move not recorded (${error.message}): its old node, should it list it again, is not told to set it aside`,
        ),
      );
  }

  /**
   * The VM's RAM held on the target as a create's is, so creates placed meanwhile leave it room;
   * not counted for its tenant (the VM is listed on its old node, and counted there).
   */
  private async holdRam(
    target: NodeState,
    ramMb: number,
    requiredFreeMb: number,
    vmId: string,
  ): Promise<string> {
    return holdRamOnTarget(this.nodes, this.clock.now(), target, {
      ramMb,
      requiredFreeMb,
      agentTimeoutMs: MOVE_AGENT_TIMEOUT_MS,
      spawnKey: moveSpawnKey(vmId),
    });
  }

  private async giveBack(target: NodeState, holdId: string): Promise<void> {
    await giveBackHold(this.nodes, this.logger, target, holdId);
  }

  /** The old node's answer, or its refusal / failure in the controller's words. */
  private async askSource<T>(
    vmId: string,
    source: NodeState,
    send: () => Promise<
      { kind: 'answered'; value: T } | { kind: 'refused'; status: number; message?: string }
    >,
  ): Promise<T> {
    let answer;
    try {
      answer = await send();
    } catch (error) {
      if (!(error instanceof AgentCallError)) throw error;
      this.logger.warn(`vm ${vmId}: move on node ${source.node_id} failed: ${error.message}`);
      throw new VmMoveFailedError(
        error.reason === 'unreachable'
          ? `vm ${vmId}: the agent of node ${source.node_id} could not be reached for the move (or did not answer in time)`
          : `vm ${vmId}: the move failed; the VM is left on node ${source.node_id} (its agent's log says why)`,
      );
    }
    if (answer.kind === 'answered') return answer.value;
    const said = answer.message === undefined ? '' : `: ${answer.message}`;
    if (answer.status === 404) {
      throw new VmMoveRefusedError(404, `vm ${vmId} is not on node ${source.node_id} any more`);
    }
    throw new VmMoveRefusedError(
      answer.status === 409 ? 409 : 422,
      `node ${source.node_id} refused the move${said}`.slice(0, 600),
    );
  }
}
