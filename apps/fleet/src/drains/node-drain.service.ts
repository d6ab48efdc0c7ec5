import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '@app/daemon';
import { DrainedVm, NodeDrain, NodeState, VmState, compareIds, toRfc3339 } from '@app/fleet-domain';
import { NodeDrainRecord, NodeDrains } from '../nodes/node-drains.repository';
import { KeyClaims } from '../nodes/key-claims.repository';
import { NodesRepository } from '../nodes/nodes.repository';
import { VmMoveService } from '../moves/vm-move.service';
import { VmMoveFailedError, VmMoveRefusedError } from '../moves/vm-move.errors';
import { PlacementRefusedError } from '../vms/vms.errors';
import { takeDrainClaim } from './drain-claim';
import { NodeDrainRefusedError } from './node-drain.errors';

/** Moves a drain runs at once: two keep it going past a slow one, without loading the fleet. */
export const DRAIN_MOVES_AT_ONCE = 2;

/**
 * `ppn-fleet node drain` on the operations listener: the node marked drained in the store (so
 * placement, on every controller, passes it over for creates, moves, restores and recoveries),
 * then each VM its agent lists moved off it by the move path (live when Running, cold when
 * Stopped; placement chooses the node), two at a time, Running ones first; each outcome logged
 * and kept beside the flag. A VM that cannot move (no room, not Running or Stopped) is left where
 * it is, running, and said why. `undrain` ends the drain: no further VM is taken.
 */
@Injectable()
export class NodeDrainService {
  private readonly logger = new Logger('Drain');
  constructor(
    private readonly nodes: NodesRepository,
    private readonly drains: NodeDrains,
    private readonly moves: VmMoveService,
    private readonly clock: Clock,
    /** Where a drain claims its node: one drain of a node at a time, on every controller. */
    private readonly claims: KeyClaims,
  ) {}

  async drain(nodeId: string): Promise<NodeDrain> {
    const node = await this.known(nodeId);
    if (!node) throw new NodeDrainRefusedError(404, `node ${nodeId} is not enrolled`);
    const claim = await takeDrainClaim(this.claims, nodeId, this.logger);
    try {
      const record = await this.drains.drain(nodeId, this.clock.wallNow());
      const vms = drainOrder(node);
      this.logger.log(
        `node ${nodeId}: drained since ${toRfc3339(record.sinceWallMs)} (placement passes it over); moving its ${vms.length} VM(s) off it, ${DRAIN_MOVES_AT_ONCE} at a time`,
      );
      const outcomes = await this.moveAll(nodeId, vms, record.vms);
      const left = outcomes.filter((vm) => vm.outcome !== 'moved').length;
      this.logger.log(
        `node ${nodeId}: drain done, ${outcomes.length - left} VM(s) moved, ${left} left on it`,
      );
      // Its own outcomes, whether or not an undrain meanwhile cleared those kept.
      return { ...(await this.describe(nodeId)), vms: outcomes };
    } finally {
      await claim.release();
    }
  }

  async undrain(nodeId: string): Promise<NodeDrain> {
    const node = await this.known(nodeId);
    const was = await this.drains.undrain(nodeId);
    if (!node && !was) throw new NodeDrainRefusedError(404, `node ${nodeId} is not enrolled`);
    if (was) this.logger.log(`node ${nodeId}: undrained, placement may choose it again`);
    return this.answer(nodeId, undefined, node);
  }

  async status(nodeId: string): Promise<NodeDrain> {
    return this.describe(nodeId, true);
  }

  /** Each VM in turn, DRAIN_MOVES_AT_ONCE at a time, until done or the node is undrained. */
  private async moveAll(
    nodeId: string,
    vms: readonly NodeState['vms'][number][],
    earlier: readonly DrainedVm[],
  ): Promise<DrainedVm[]> {
    // A drain run again (say after room was made) keeps what the earlier one did with the VMs
    // it does not take again.
    const taken = new Set(vms.map((vm) => vm.vm_id));
    const outcomes: DrainedVm[] = earlier.filter((vm) => !taken.has(vm.vm_id));
    const queue = [...vms];
    const worker = async () => {
      for (let vm = queue.shift(); vm; vm = queue.shift()) {
        if (!(await this.stillDrained(nodeId))) {
          queue.length = 0;
          this.logger.log(`node ${nodeId}: undrained mid-drain; its other VMs stay`);
          return;
        }
        outcomes.push(await this.moveOne(nodeId, vm.vm_id));
        await this.drains
          .recordOutcomes(nodeId, outcomes)
          .catch((error: Error) =>
            this.logger.warn(`node ${nodeId}: drain progress not stored (${error.message})`),
          );
      }
    };
    await Promise.all(Array.from({ length: DRAIN_MOVES_AT_ONCE }, worker));
    return outcomes;
  }

  private async moveOne(nodeId: string, vmId: string): Promise<DrainedVm> {
    const startedMs = this.clock.now();
    const took = () => Math.max(0, Math.round(this.clock.now() - startedMs));
    try {
      const moved = await this.moves.move(vmId, {});
      this.logger.log(
        `node ${nodeId}: drain moved vm ${vmId} ${moved.mode} to node ${moved.vm.node_id} in ${(took() / 1000).toFixed(1)} s`,
      );
      return {
        vm_id: vmId,
        outcome: 'moved',
        to_node_id: moved.vm.node_id,
        mode: moved.mode,
        message: null,
        took_ms: took(),
      };
    } catch (error) {
      const refused = error instanceof PlacementRefusedError || error instanceof VmMoveRefusedError;
      const failed = error instanceof VmMoveFailedError;
      const message = (error as Error).message.slice(0, 600);
      this.logger.warn(
        `node ${nodeId}: drain ${refused ? 'left' : 'could not move'} vm ${vmId} on it: ${message}`,
      );
      return {
        vm_id: vmId,
        outcome: refused ? 'left' : 'failed',
        to_node_id: null,
        mode: null,
        message: refused || failed ? message : `the move failed: ${message}`,
        took_ms: took(),
      };
    }
  }

  /** Whether the node is still drained; a store that cannot say stops the drain. */
  private async stillDrained(nodeId: string): Promise<boolean> {
    return (await this.drains.find(nodeId).catch(() => undefined)) !== undefined;
  }

  /** The node's stored record (live or kept silent for its VMs); undefined: none. */
  private async known(nodeId: string): Promise<NodeState | undefined> {
    return (await this.nodes.listAll()).find((node) => node.node_id === nodeId);
  }

  private async describe(nodeId: string, refuseUnknown = false): Promise<NodeDrain> {
    const [node, record] = await Promise.all([this.known(nodeId), this.drains.find(nodeId)]);
    if (refuseUnknown && !node && !record) {
      throw new NodeDrainRefusedError(404, `node ${nodeId} is not enrolled`);
    }
    return this.answer(nodeId, record, node);
  }

  private answer(
    nodeId: string,
    record: NodeDrainRecord | undefined,
    node: NodeState | undefined,
  ): NodeDrain {
    return {
      node_id: nodeId,
      drained: record !== undefined,
      since: record ? toRfc3339(record.sinceWallMs) : null,
      vms: record?.vms ?? [],
      remaining_vm_ids: (node?.vms ?? []).map((vm) => vm.vm_id),
    };
  }
}

/** Running VMs first (they are what users reach), then the others; by id within each. */
export function drainOrder(node: Pick<NodeState, 'vms'>): NodeState['vms'] {
  const running = (vm: NodeState['vms'][number]) => (vm.state === VmState.Running ? 0 : 1);
  return [...node.vms].sort((a, b) => running(a) - running(b) || compareIds(a.vm_id, b.vm_id));
}
