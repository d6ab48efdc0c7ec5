import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '@app/daemon';
import {
  DEFAULT_RECOVER_AFTER_S,
  HeartbeatVm,
  NODE_STALE_AFTER_MS,
  NodeState,
  isLive,
  liveSince,
  toRfc3339,
} from '@app/fleet-domain';
import { FleetConfig } from '../config/fleet.config';
import { FleetMetrics } from '../metrics/fleet-metrics.service';
import { Leadership } from '../nodes/leadership';
import { LapsedNode, NodeLeases } from '../nodes/node-leases';
import { NodesRepository } from '../nodes/nodes.repository';
import { VmMoves } from '../nodes/vm-moves.repository';
import { VmRestoreService } from '../operations/vm-restore.service';

/** VMs whose failed recovery is warned once per reason (beyond: forgotten, warned anew). */
const FAILURES_KEPT = 10_000;

/** What the leader did with one lapsed node in one pass. */
export interface NodeRecovery {
  nodeId: string;
  recovered: string[];
  failed: string[];
  /** Its VMs whose copy policy wants none: they stay listed on it, silent. */
  unprotected: string[];
  /** The node heartbeats again: recovery ended, its lease is renewed at its next heartbeat. */
  cameBack: boolean;
}

/**
 * Recovery (issue 36, etcd mode, the leader only): a node whose lease is gone and whose last
 * renewal is older than VM_FLEET_RECOVER_AFTER_S (so its agent fenced its protected VMs a
 * while ago) is marked as being recovered (its lease is not renewed meanwhile), then each of
 * its protected VMs is restored from its freshest copy on a live node by the operations
 * listener's restore path (which records the move, so the old node, should it come back, is
 * told the VM is superseded), and its generation raised. A VM whose restore fails is tried
 * again at the next pass; the node's mark ends once every protected VM runs elsewhere.
 */
@Injectable()
export class RecoveryService {
  private readonly logger = new Logger('Recovery');
  /** The last failure warned for each VM, so a retry every pass logs only a new reason. */
  private readonly failures = new Map<string, string>();
  /**
   * When this controller started: after a restart of every machine (a power cut), the nodes'
   * records are old and their leases lapsed, so no node is judged before their agents had a
   * staleness window to heartbeat again.
   */
  private readonly startedAtMs: number;

  constructor(
    private readonly leases: NodeLeases,
    private readonly leadership: Leadership,
    private readonly nodes: NodesRepository,
    private readonly vmMoves: VmMoves,
    private readonly restorer: VmRestoreService,
    private readonly clock: Clock,
    private readonly config: FleetConfig,
    private readonly metrics: FleetMetrics,
  ) {
    this.startedAtMs = clock.now();
  }

  private get recoverAfterMs(): number {
    return (this.config.recoverAfterS ?? DEFAULT_RECOVER_AFTER_S) * 1000;
  }

  /** One pass: every lapsed node, on the leader only. */
  async recoverLapsedNodes(): Promise<NodeRecovery[]> {
    if (!this.leases.enabled || !this.leadership.isLeader()) return [];
    if (this.clock.now() - this.startedAtMs < NODE_STALE_AFTER_MS) return [];
    const lapsed = await this.leases.lapsed(this.clock.wallNow() - this.recoverAfterMs);
    const done: NodeRecovery[] = [];
    if (lapsed.length === 0) return done;
    // Kept silent after the sweep dropped them, lapsed nodes are out of the live reads.
    const stored = new Map((await this.nodes.listAll()).map((state) => [state.node_id, state]));
    for (const node of lapsed) {
      // A leader that lost its leadership mid-pass leaves the rest to the next one.
      if (!this.leadership.isLeader()) break;
      if (!node.recovering) {
        if (!(await this.leases.beginRecovery(node.nodeId))) continue;
        this.logger.warn(
          `node ${node.nodeId}: lease lapsed, last renewed ${describeRenewal(node)}: its protected VMs are recovered from their copies on other nodes`,
        );
      }
      done.push(await this.recoverNode(node, stored.get(node.nodeId)));
    }
    return done;
  }

  private async recoverNode(node: LapsedNode, state?: NodeState): Promise<NodeRecovery> {
    const result: NodeRecovery = {
      nodeId: node.nodeId,
      recovered: [],
      failed: [],
      unprotected: [],
      cameBack: false,
    };
    if (state && cameBack(state, node)) {
      // Its agent heartbeats again (taken, its lease not renewed) before its VMs ran elsewhere:
      // they stay its own (fenced until its lease is renewed, at its next heartbeat now).
      await this.leases.endRecovery(node.nodeId);
      this.logger.warn(
        `node ${node.nodeId} heartbeats again: recovery of its VMs ends, its lease is renewed at its next heartbeat`,
      );
      result.cameBack = true;
      return result;
    }
    // Still listed live (its last heartbeat under 30 s ago: a recover_after_s below that), the
    // restore path would refuse its VMs: the next pass, once it is silent.
    if (state && isLive(state, liveSince(this.clock.now()))) return result;
    const vms = state ? vmsOf(state) : [];
    const moved = await this.vmMoves.movesOf(vms.map((vm) => vm.vm_id));
    for (const vm of vms) {
      const move = moved.get(vm.vm_id);
      if (move && move.nodeId !== node.nodeId) continue;
      if ((vm.copies?.count ?? this.config.copies) < 1) {
        result.unprotected.push(vm.vm_id);
        continue;
      }
      if (await this.recoverVm(node, vm.vm_id)) result.recovered.push(vm.vm_id);
      else result.failed.push(vm.vm_id);
    }
    if (result.failed.length === 0) {
      await this.leases.endRecovery(node.nodeId);
      const unprotected =
        result.unprotected.length === 0
          ? ''
          : `; ${result.unprotected.length} VM(s) without copies (${result.unprotected.slice(0, 3).join(', ')}) are not recovered and stay listed on it`;
      this.logger.log(
        `node ${node.nodeId}: recovery done, ${result.recovered.length} VM(s) recovered${unprotected}`,
      );
    }
    return result;
  }

  private async recoverVm(node: LapsedNode, vmId: string): Promise<boolean> {
    try {
      const restored = await this.restorer.restore(vmId, {});
      const generation = await this.leases.raiseGeneration(vmId);
      const takenAtMs = Date.parse(restored.point.taken_at);
      const ageS = Number.isNaN(takenAtMs)
        ? 'unknown'
        : `${Math.max(0, (this.clock.wallNow() - takenAtMs) / 1000).toFixed(0)} s`;
      this.failures.delete(vmId);
      this.metrics.countRecovery('recovered');
      this.logger.warn(
        `node ${node.nodeId} lost (last lease renewal ${describeRenewal(node)}): vm ${vmId} recovered on node ${restored.vm.node_id} from its ${restored.point.source} ${restored.point.backup_id} taken ${restored.point.taken_at} (copy age ${ageS}), generation ${generation}`,
      );
      return true;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      this.metrics.countRecovery('failed');
      if (this.failures.get(vmId) !== reason) {
        if (this.failures.size >= FAILURES_KEPT) this.failures.clear();
        this.failures.set(vmId, reason);
        this.logger.error(
          `node ${node.nodeId} lost: vm ${vmId} not recovered (${reason}); tried again at each pass, said again when the reason changes`,
        );
      }
      return false;
    }
  }
}

/**
 * A heartbeat of the node was taken after its last lease renewal: it heartbeats again (its lease
 * not renewed while marked). One that renewed was stored before its renewal was stamped.
 */
function cameBack(state: NodeState, node: LapsedNode): boolean {
  return node.renewedAtWallMs !== undefined && state.received_at_wall_ms > node.renewedAtWallMs;
}

/** Its own VMs and those an earlier agent of its id listed: all of them may have been its. */
function vmsOf(state: NodeState): HeartbeatVm[] {
  return [...state.vms, ...state.silent_vms.map((silent) => silent.vm)];
}

function describeRenewal(node: LapsedNode): string {
  return node.renewedAtWallMs === undefined
    ? 'never known (declared dead)'
    : toRfc3339(node.renewedAtWallMs);
}
