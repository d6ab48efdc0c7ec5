import { Injectable, Logger } from '@nestjs/common';
import { Clock, signCopyGrant } from '@app/daemon';
import { CopyPlan, NodeState, isLive, liveSince, toRfc3339 } from '@app/fleet-domain';
import { NodeDrains } from '../nodes/node-drains.repository';
import { NodeTokens } from '../nodes/node-tokens';
import { NodesRepository } from '../nodes/nodes.repository';
import { GrantedCopies } from '../nodes/granted-copies';
import { Leadership } from '../nodes/leadership';
import { SharedCopyGrants } from '../nodes/shared-copy-grants';
import { VmHostClient } from '../vms/vm-host.client';
import { chooseDrainAwarePeers } from './drain-aware-peers';

/**
 * How long a copy grant lets a source write its VM's copy on a peer: short, so a grant outlives
 * the VM's move (a restore elsewhere) by minutes at most; long enough for a full copy of a
 * large disk at VM_COPY_MAX_MBPS.
 */
export const COPY_GRANT_LIFE_MS = 20 * 60_000;
/** Past this share of its life, a grant is issued again (the plan pushed anew). */
const RENEW_AFTER_MS = COPY_GRANT_LIFE_MS / 2;

/** What was last pushed to a VM's agent: its node, its plan, when its grants were issued. */
interface Pushed {
  nodeId: string;
  plan: CopyPlan;
  issuedAtWallMs: number;
}

/** How one round went, for the log and the tests. */
export interface PlanRound {
  pushed: string[];
  failed: string[];
}

/**
 * Where each VM's copies go: for every VM on a live node whose policy asks for copies, peers
 * chosen by chooseCopyPeers (live, not its node, not drained, room, spread, sticky), each with a grant
 * signed with that peer's agent token, pushed to the VM's agent as its copy plan when the peers
 * change or the grants pass half their life. What was pushed is kept in memory only: a
 * restarted controller pushes every plan again. In etcd mode only the elected leader plans
 * (two planners could push one agent different peers), records each grant in etcd before
 * pushing it (SharedCopyGrants, so followers take the copies it granted), and pushes every
 * plan anew each time it comes to lead.
 */
@Injectable()
export class CopyPlannerService {
  private readonly logger = new Logger('Copies');
  private readonly pushed = new Map<string, Pushed>();
  /** The nodes drained as of this round (read once a round). */
  private drained: ReadonlySet<string> = new Set();

  constructor(
    private readonly nodes: NodesRepository,
    private readonly nodeTokens: NodeTokens,
    private readonly vmHost: VmHostClient,
    private readonly clock: Clock,
    /** Absent (a unit test's planner): the grants issued are not recorded. */
    private readonly granted?: GrantedCopies,
    /** Absent: it plans, as the sole controller. */
    private readonly leadership?: Leadership,
    /** Absent: grants are not shared with other controllers. */
    private readonly sharedGrants?: SharedCopyGrants,
    /** Drained nodes are no new copy peers (drain-aware-peers.ts); absent: none drained. */
    private readonly drains?: NodeDrains,
  ) {}

  /** Whether this controller plans now: in etcd mode only the leader (else two could push different peers). */
  private plans(): boolean {
    return this.leadership?.isLeader() !== false;
  }

  async planAll(): Promise<PlanRound> {
    if (!this.plans()) {
      // What another leader pushed meanwhile is unknown: leading again, every plan is pushed anew.
      this.pushed.clear();
      return { pushed: [], failed: [] };
    }
    const nowMs = this.clock.now();
    const wallMs = this.clock.wallNow();
    const live = await this.nodes.listLive(liveSince(nowMs));
    this.drained = new Set((await this.drains?.drainedSince())?.keys() ?? []);
    const round: PlanRound = { pushed: [], failed: [] };
    const seen = new Set<string>();
    const held = new Map<string, number>();
    for (const node of live) held.set(node.node_id, node.replicas.length);
    for (const node of live) {
      if (!isLive(node, liveSince(nowMs))) continue;
      for (const vm of node.vms) {
        seen.add(vm.vm_id);
        const plan = this.planFor(node, vm.vm_id, vm.copies, vm.disk_gb, live, held, wallMs);
        const last = this.pushed.get(vm.vm_id);
        if (plan === undefined) continue;
        if (last && last.nodeId === node.node_id && samePlan(last.plan, plan)) {
          if (wallMs - last.issuedAtWallMs < RENEW_AFTER_MS) continue;
        }
        // A VM with no copies and none pushed: nothing to say.
        if (!last && plan.peers.length === 0) continue;
        // Leadership lost mid-round: the new leader plans from here.
        if (!this.plans()) break;
        try {
          await this.recordNewGrants(vm.vm_id, plan, last?.plan);
          const outcome = await this.vmHost.putCopyPlan(node, vm.vm_id, plan);
          if (outcome === 'set') {
            this.pushed.set(vm.vm_id, { nodeId: node.node_id, plan, issuedAtWallMs: wallMs });
            // Only the peers granted may report holding its copy (GrantedCopies).
            for (const peer of plan.peers) this.granted?.granted(vm.vm_id, peer.node_id, wallMs);
            round.pushed.push(vm.vm_id);
            if (!last || !samePeers(last.plan, plan)) {
              this.logger.log(
                `vm ${vm.vm_id} on node ${node.node_id}: copies every ${plan.every_s} s to ${plan.peers.map((peer) => `node ${peer.node_id}`).join(', ') || 'no node'}`,
              );
            }
          }
        } catch (error) {
          round.failed.push(vm.vm_id);
          this.logger.warn(
            `vm ${vm.vm_id}: copy plan not sent to node ${node.node_id}: ${(error as Error).message}`,
          );
        }
      }
    }
    for (const vmId of [...this.pushed.keys()]) if (!seen.has(vmId)) this.pushed.delete(vmId);
    return round;
  }

  /**
   * Grants signed this round are recorded in the shared store before any agent gets them, so
   * every controller takes the peer's report of its copy (GrantedCopies); failing, the plan is
   * not pushed (tried again next round).
   */
  private async recordNewGrants(vmId: string, plan: CopyPlan, last?: CopyPlan): Promise<void> {
    if (!this.sharedGrants?.shared) return;
    const fresh = plan.peers.some(
      (peer) =>
        !last?.peers.some((kept) => kept.node_id === peer.node_id && kept.grant === peer.grant),
    );
    if (!fresh) return;
    await this.sharedGrants.record(
      vmId,
      plan.peers.map((peer) => ({
        vmId,
        peerId: peer.node_id,
        issuedAtWallMs: issuedAtOf(peer.expires_at),
      })),
    );
  }

  /** The VM's plan as of now (its grants issued at `wallMs`); undefined: no policy reported. */
  private planFor(
    node: NodeState,
    vmId: string,
    policy: { count: number; every_s: number } | undefined,
    diskGb: number | undefined,
    live: readonly NodeState[],
    held: Map<string, number>,
    wallMs: number,
  ): CopyPlan | undefined {
    if (!policy) return undefined;
    const last = this.pushed.get(vmId);
    const holders = live
      .filter((peer) =>
        peer.replicas.some((copy) => copy.vm_id === vmId && copy.source_node_id === node.node_id),
      )
      .map((peer) => peer.node_id);
    const current = [...(last?.plan.peers.map((peer) => peer.node_id) ?? []), ...holders];
    // The VM's own disk_gb, never a size a holder reports (a node could claim any). Without
    // disk_gb (the base image's size, unknown here) the peer's own room check decides.
    const neededMb = diskGb === undefined ? 0 : Math.ceil((diskGb * 1024 ** 3) / 1e6);
    const chosen = chooseDrainAwarePeers({
      ...{ vmId, sourceNodeId: node.node_id, count: policy.count, neededMb, current },
      ...{ live, held, drained: this.drained },
    });
    const peers: CopyPlan['peers'] = [];
    const renew = !last || wallMs - last.issuedAtWallMs >= RENEW_AFTER_MS;
    for (const peerId of chosen) {
      const peer = live.find((candidate) => candidate.node_id === peerId)!;
      const kept = last?.plan.peers.find((candidate) => candidate.node_id === peerId);
      const address = `${peer.wg_ip.includes(':') ? `[${peer.wg_ip}]` : peer.wg_ip}:${peer.spawn_port}`;
      if (kept && !renew && kept.address === address) {
        peers.push(kept);
        continue;
      }
      const token = this.nodeTokens.forAgent(peer.node_id, peer.credential);
      if ('unusable' in token) continue;
      const expiresAtMs = wallMs + COPY_GRANT_LIFE_MS;
      peers.push({
        node_id: peer.node_id,
        address,
        grant: signCopyGrant(token.token, {
          vm: vmId,
          source: node.node_id,
          peer: peer.node_id,
          expiresAtMs,
          // The peer refuses a grant older than its copy's chain or the VM's last restore.
          issuedAtMs: wallMs,
        }),
        expires_at: toRfc3339(expiresAtMs),
      });
      if (!kept) held.set(peer.node_id, (held.get(peer.node_id) ?? 0) + 1);
    }
    return { every_s: policy.every_s, peers };
  }
}

function samePeers(a: CopyPlan, b: CopyPlan): boolean {
  return (
    a.peers.length === b.peers.length &&
    a.peers.every(
      (peer, index) =>
        peer.node_id === b.peers[index].node_id && peer.address === b.peers[index].address,
    )
  );
}

function samePlan(a: CopyPlan, b: CopyPlan): boolean {
  return a.every_s === b.every_s && samePeers(a, b);
}

/** A grant's issued-at, from its expiry (each is issued COPY_GRANT_LIFE_MS before it expires). */
function issuedAtOf(expiresAt: string): number {
  return Date.parse(expiresAt) - COPY_GRANT_LIFE_MS;
}
