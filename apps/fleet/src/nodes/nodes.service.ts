import { Injectable, Logger } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { Clock } from '@app/daemon';
import {
  FleetStatus,
  ForeignVm,
  HeartbeatAnswer,
  NodeHeartbeat,
  NodeRecord,
  NodeSpeaker,
  NodeState,
  SILENT_NODES_KEPT,
  SilentVm,
  acceptHeartbeat,
  compareIds,
  describeSpeaker,
  endExpiredHolds,
  foreignVms,
  heldVmIds,
  isLoopbackAddress,
  keepsVmsWhenSilent,
  liveSince,
  toRfc3339,
  keepsMovedVm,
} from '@app/fleet-domain';
import { FleetConfig } from '../config/fleet.config';
import { FleetMetrics } from '../metrics/fleet-metrics.service';
import { FOREIGN_VM_EPISODE_QUIET_MS, ForeignVmIds } from './foreign-vm-ids.tracker';
import { NodeIdConflicts } from './node-id-conflicts.tracker';
import { NodeTokens } from './node-tokens';
import { LoopbackWgIpError, NodeNotFoundError } from './nodes.errors';
import { HeartbeatCredentials } from './heartbeat-credentials';
import { KnownVmIds } from './known-vm-ids';
import { NodesRepository, VmIdsHeldElsewhereError } from './nodes.repository';
import { wantedReplicaVmIds } from './wanted-replicas';
import { GrantedCopies } from './granted-copies';
import { VmMoves } from './vm-moves.repository';
import { NodeLeases } from './node-leases';
import { withGrantedReplicas } from './granted-replicas-change';
import { MeshRoutes } from './mesh-routes';

/** Nodes named one by one per sweep; beyond that, one summary line. */
const DROP_LINES_PER_SWEEP = 20;

const NO_VM_IDS: string[] = [];

/** Every heartbeat taken gets this same answer; one object, so serialized once (bootstrap). */
export const ACCEPTED: HeartbeatAnswer = Object.freeze({ accepted: true });

@Injectable()
export class NodesService {
  private readonly logger = new Logger('Nodes');
  private readonly conflicts = new NodeIdConflicts();
  private readonly foreignVmIds = new ForeignVmIds();
  private readonly knownVmIds = new KnownVmIds();
  private readonly credentials: HeartbeatCredentials;

  constructor(
    private readonly nodes: NodesRepository,
    private readonly clock: Clock,
    private readonly metrics: FleetMetrics,
    // Required: a default of none would quietly take any token for any node (fail open).
    private readonly nodeTokens: NodeTokens,
    private readonly vmMoves?: VmMoves,
    /** etcd mode: each heartbeat taken renews its node's fencing lease (answer fence_after_s). */
    private readonly leases?: NodeLeases,
    /** Absent (a unit test's service): every reported copy is taken. */
    private readonly grantedCopies?: GrantedCopies,
    /** Its VM_FLEET_COPIES goes with fence_after_s (copies_default): the agent fences what recovery restores. */
    private readonly config?: FleetConfig,
    /** Absent (a unit test's service): answers carry no routing mesh table. */
    private readonly meshRoutes?: MeshRoutes,
  ) {
    this.credentials = new HeartbeatCredentials(nodeTokens, clock, this.logger);
  }

  /**
   * Replaces the node's record with the heartbeat; the first one enrolls the node. The answer
   * says whether it was taken (a late copy is not). With per-node tokens, `token` (the bearer
   * token it came with) must be one the controller takes for that node, else nothing is
   * touched; which one it was is stored with the node, its agent is called with that kind.
   * `from`: the address it came from, for the log.
   */
  async acceptHeartbeat(
    heartbeat: NodeHeartbeat,
    token?: string,
    from?: string,
  ): Promise<HeartbeatAnswer> {
    const credential = this.credentials.checkSpeaksForItself(heartbeat.node_id, token, from);
    this.checkWgIp(heartbeat, from);
    const receivedAtMs = this.clock.now();
    // No await where nothing is to be waited for (most heartbeats): each costs a promise.
    const superseded =
      this.vmMoves && heartbeat.vms.length > 0 && !this.vmMoves.noneRecorded()
        ? await this.supersededOf(heartbeat)
        : NO_VM_IDS;
    let owned = this.knownVmIds.listsOnlyKnown(heartbeat.node_id, heartbeat.vms)
      ? heartbeat
      : await this.withoutForeignVms(heartbeat, receivedAtMs);
    let verdict;
    for (;;) {
      try {
        verdict = await this.nodes.update(
          heartbeat.node_id,
          withGrantedReplicas(
            acceptHeartbeat(owned, receivedAtMs, this.clock.wallNow(), credential),
            this.grantedCopies,
          ),
        );
        break;
      } catch (error) {
        // Another node came to hold one of its new VM ids since ownersOf looked (it listed it
        // at the same instant, through another controller): the store claimed the id for that
        // node, so this one's listing of it is ignored, as any foreign VM. Each time round
        // leaves out at least one VM, so this ends.
        if (!(error instanceof VmIdsHeldElsewhereError)) throw error;
        const foreign = foreignVms(owned.vms, error.owners);
        if (foreign.length === 0) throw error;
        owned = this.ignoreForeign(owned, foreign, receivedAtMs);
      }
    }
    if (verdict.kind !== 'out-of-order') {
      this.knownVmIds.taken(owned.node_id, owned.vms);
    }
    this.metrics.countHeartbeat(verdict.kind);
    const id = heartbeat.node_id;
    switch (verdict.kind) {
      case 'joined':
        this.logger.log(
          `node ${id} joined from ${describeSpeaker(heartbeat)}${verdict.silent ? `; silent since its heartbeat of ${toRfc3339(verdict.silent.last_heartbeat_wall_ms)}, its ${verdict.silent.vms} VM(s) kept meanwhile are replaced by the ${heartbeat.vms.length} it reports${verdict.silent.still_silent.length > 0 ? `, but for ${verdict.silent.still_silent.length} it does not list` : ''}` : ''}`,
        );
        if (verdict.silent && verdict.silent.still_silent.length > 0) {
          this.warnStillSilent(heartbeat, verdict.silent.previous, verdict.silent.still_silent);
        }
        break;
      case 'taken-over':
        this.noteTakeOver(heartbeat, verdict.previous, receivedAtMs);
        break;
      case 'out-of-order':
        this.logger.warn(
          `node ${id}: ignored heartbeat stamped ${heartbeat.timestamp_utc}, older than the stored ${verdict.stored_timestamp_utc} of boot ${heartbeat.boot_id}`,
        );
        return {
          accepted: false,
          stored_timestamp_utc: verdict.stored_timestamp_utc,
          ...(superseded.length > 0 ? { superseded_vm_ids: superseded } : {}),
        };
      case 'refreshed':
        break;
    }
    const fenceAfterS = this.leases ? await this.leases.renew(id, this.clock.wallNow()) : undefined;
    // A store that cannot be read now says nothing of them (the peer removes nothing).
    const wanted = heartbeat.replicas?.length
      ? await wantedReplicaVmIds(heartbeat.replicas, this.nodes).catch(() => undefined)
      : undefined;
    const meshing = this.meshRoutes?.forNode(id);
    const mesh = meshing instanceof Promise ? await meshing : meshing;
    if (fenceAfterS === undefined && superseded.length === 0 && !wanted && !mesh) return ACCEPTED;
    return {
      accepted: true,
      ...(mesh ? { mesh_routes: mesh } : {}),
      ...(wanted ? { wanted_replica_vm_ids: wanted } : {}),
      ...(superseded.length > 0 && { superseded_vm_ids: superseded }),
      ...(fenceAfterS !== undefined && { fence_after_s: fenceAfterS }),
      ...(fenceAfterS !== undefined && this.config && { copies_default: this.config.copies }),
    };
  }

  /**
   * The VMs the heartbeat lists that were restored onto another node since (VmMoves): its agent
   * must set them aside and never start them. Said once per heartbeat that lists one, naming it;
   * the heartbeat itself is judged as ever (another node holds those ids: they are foreign).
   */
  private async supersededOf(heartbeat: NodeHeartbeat): Promise<string[]> {
    if (!this.vmMoves || heartbeat.vms.length === 0) return [];
    const moves = await this.vmMoves.movesOf(heartbeat.vms.map((vm) => vm.vm_id));
    const superseded: string[] = [];
    // A node a VM is being moved to, or was moved to since, keeps it (see keepsMovedVm).
    const own =
      moves.size > 0
        ? await this.nodes.findLive(heartbeat.node_id, Number.MIN_SAFE_INTEGER)
        : undefined;
    for (const [vmId, move] of moves) {
      if (move.nodeId === heartbeat.node_id) continue;
      if (own && keepsMovedVm(own, vmId, this.clock.now())) continue;
      superseded.push(vmId);
      this.logger.warn(
        `node ${heartbeat.node_id} lists vm ${vmId}, restored on node ${move.nodeId} at ${toRfc3339(move.atWallMs)}: its agent is told it is superseded (it stops it and sets its disk aside)`,
      );
    }
    return superseded;
  }

  /**
   * The heartbeat without the VMs whose ids another node holds (see foreignVms): a VM belongs
   * to the first node that listed it, so another node's heartbeat cannot list it twice, take
   * its silent mark away or have its DELETE routed elsewhere. Only the ids its node did not hold
   * before (a new VM, or a first heartbeat) are looked up, those alone (NodesRepository.ownersOf),
   * so enrolling a fleet costs what its VMs cost, not a read of the store per node.
   * Warned once per episode, naming both nodes, and counted.
   */
  private async withoutForeignVms(heartbeat: NodeHeartbeat, nowMs: number): Promise<NodeHeartbeat> {
    // Called once KnownVmIds.listsOnlyKnown said no. A silent one too: its VMs are its own as well.
    const own = await this.nodes.findLive(heartbeat.node_id, Number.MIN_SAFE_INTEGER);
    const known = new Set(own ? heldVmIds(own) : []);
    const unknown = heartbeat.vms.filter((vm) => !known.has(vm.vm_id)).map((vm) => vm.vm_id);
    if (unknown.length === 0) return heartbeat;
    const owners = await this.nodes.ownersOf(unknown, heartbeat.node_id);
    return this.ignoreForeign(heartbeat, foreignVms(heartbeat.vms, owners, known), nowMs);
  }

  /** The heartbeat without the `foreign` VMs, each warned once per episode and counted. */
  private ignoreForeign(
    heartbeat: NodeHeartbeat,
    foreign: readonly ForeignVm[],
    nowMs: number,
  ): NodeHeartbeat {
    if (foreign.length === 0) return heartbeat;
    for (const { vm_id, owner } of foreign) {
      if (!this.foreignVmIds.note(heartbeat.node_id, vm_id, nowMs)) continue;
      this.metrics.countVmIdConflict();
      this.logger.warn(
        `node ${heartbeat.node_id} (${describeSpeaker(heartbeat)}) lists vm ${vm_id}, which node ${owner} holds: ignored (not listed under ${heartbeat.node_id}, nothing routed to it); a VM id belongs to the node it was dispatched to. Warned once until it has not listed it for ${FOREIGN_VM_EPISODE_QUIET_MS / 1000} s`,
      );
    }
    const ignored = new Set(foreign.map(({ vm_id }) => vm_id));
    return { ...heartbeat, vms: heartbeat.vms.filter((vm) => !ignored.has(vm.vm_id)) };
  }

  /**
   * A silent node's id heartbeats again without listing VMs it (or an earlier agent) listed:
   * another machine speaks for the id (a cloned VM_NODE_ID, another VM_DISK_DIR), and those
   * VMs may still run on the old one. They stay listed, with node_silent_since.
   */
  private warnStillSilent(
    heartbeat: NodeHeartbeat,
    previous: NodeSpeaker,
    stillSilent: readonly SilentVm[],
  ): void {
    const shown = stillSilent.slice(0, 3).map(({ vm }) => vm.vm_id);
    const more =
      stillSilent.length > shown.length ? `, ${stillSilent.length - shown.length} more` : '';
    this.logger.warn(
      `node ${heartbeat.node_id}: ${describeSpeaker(heartbeat)} heartbeats for it and does not list ${stillSilent.length} VM(s) (${shown.join(', ')}${more}) that ${describeSpeaker(previous)} listed before the node went silent: they may still run there, unmanaged, and stay listed in GET /v1/vms with node_silent_since; give each machine its own VM_NODE_ID (an agent on the same VM_DISK_DIR lists every VM it has), or forget each with DELETE /v1/vms/<vm_id>?forget=true if that machine is gone for good`,
    );
  }

  /**
   * A loopback wg_ip only from a heartbeat whose TCP peer is loopback too: the agent is on the
   * controller's own machine (`npm start`, the tests), and calling it there is calling it. From
   * anywhere else it would aim the controller's calls at its own loopback services (Redis, the
   * operations listener). Unspecified, multicast and link-local addresses the wire refuses.
   */
  private checkWgIp(heartbeat: NodeHeartbeat, from: string | undefined): void {
    if (!isLoopbackAddress(heartbeat.wg_ip)) return;
    if (from !== undefined && isLoopbackAddress(from)) return;
    this.logger.warn(
      `node ${heartbeat.node_id}: heartbeat refused, its wg_ip ${heartbeat.wg_ip} is loopback but it came from ${from ?? 'an unknown address'}`,
    );
    throw new LoopbackWgIpError(heartbeat.wg_ip, from);
  }

  /**
   * One line per hand-over of a node id; but two live agents on one id take it from each other
   * at every beat: that is one warning per episode, naming both, and one count.
   */
  private noteTakeOver(
    heartbeat: NodeHeartbeat,
    previous: Parameters<NodeIdConflicts['noteTakeOver']>[1],
    atMs: number,
  ): void {
    const id = heartbeat.node_id;
    const meaning = this.conflicts.noteTakeOver(id, previous, heartbeat, atMs);
    switch (meaning.kind) {
      case 'handover':
        this.logger.log(
          `node ${id} taken over: now ${describeSpeaker(heartbeat)}, was ${describeSpeaker(previous)}`,
        );
        break;
      case 'conflict-began': {
        const [one, other] = meaning.conflict.agents;
        this.metrics.countNodeIdConflict();
        this.logger.warn(
          `node ${id} is used by two agents at once: ${describeSpeaker(one)} and ${describeSpeaker(other)} take it from each other at every heartbeat, each replacing the other's record and VMs; give each its own VM_NODE_ID (warned once until neither has taken it from the other for 60 s)`,
        );
        break;
      }
      case 'conflict-continues':
        break;
    }
  }

  async listNodes(): Promise<NodeRecord[]> {
    const records = await this.nodes.listLiveRecords(liveSince(this.clock.now()));
    return records.sort(byNodeId);
  }

  async getNode(nodeId: string): Promise<NodeRecord> {
    const state = await this.nodes.findLive(nodeId, liveSince(this.clock.now()));
    if (!state) throw new NodeNotFoundError(nodeId);
    return state.record;
  }

  async fleetStatus(): Promise<FleetStatus> {
    const records = await this.nodes.listLiveRecords(liveSince(this.clock.now()));
    return {
      nodes: records.sort(byNodeId),
      last_updated: toRfc3339(this.clock.wallNow()),
    };
  }

  /**
   * Drops every node silent for more than 30 s, one log line each; when a whole rack goes
   * silent at once, the first few are named and one summary line says how many went.
   */
  async dropStaleNodes(): Promise<void> {
    const startedAt = performance.now();
    const now = this.clock.now();
    const dropped = await this.nodes.dropStale(liveSince(now));
    for (const state of dropped.slice(0, DROP_LINES_PER_SWEEP)) {
      const silentS = ((now - state.received_at_ms) / 1000).toFixed(1);
      const line = `node ${state.node_id} dropped after ${silentS} s without a heartbeat`;
      if (!keepsVmsWhenSilent(state)) this.logger.log(line);
      else this.logger.warn(`${line}; ${describeSilentVms(state)}`);
    }
    const forgotten = await this.nodes.forgetSilentBeyond(SILENT_NODES_KEPT);
    for (const state of forgotten.slice(0, DROP_LINES_PER_SWEEP)) {
      this.logger.warn(
        `node ${state.node_id}: forgot its ${state.vms.length + state.silent_vms.length} VM(s) kept since its last heartbeat (${toRfc3339(state.received_at_wall_ms)}): more than ${SILENT_NODES_KEPT} silent nodes are kept, the longest silent go first; they are listed again when its agent heartbeats`,
      );
    }
    if (forgotten.length > DROP_LINES_PER_SWEEP) {
      const vms = forgotten.reduce(
        (sum, state) => sum + state.vms.length + state.silent_vms.length,
        0,
      );
      this.logger.warn(
        `forgot ${forgotten.length} silent nodes and their ${vms} VM(s) in one sweep (more than ${SILENT_NODES_KEPT} are kept); ${forgotten.length - DROP_LINES_PER_SWEEP} not named above`,
      );
    }
    this.metrics.observeSweep((performance.now() - startedAt) / 1000, dropped.length);
    for (const conflict of this.conflicts.endQuiet(now)) {
      const [one, other] = conflict.agents;
      const lastedS = ((conflict.last_ms - conflict.since_ms) / 1000).toFixed(0);
      this.logger.log(
        `node ${conflict.node_id}: no longer taken back and forth (${conflict.takeovers} take-overs in ${lastedS} s between ${describeSpeaker(one)} and ${describeSpeaker(other)}, none for 60 s)`,
      );
    }
    if (dropped.length > DROP_LINES_PER_SWEEP) {
      const tookMs = (performance.now() - startedAt).toFixed(1);
      this.logger.log(
        `dropped ${dropped.length} nodes silent for more than 30 s in one sweep (${tookMs} ms); ${dropped.length - DROP_LINES_PER_SWEEP} not named above`,
      );
    }
  }

  /**
   * Ends every RAM hold past its deadline (a dispatch that never came back, a controller that
   * died mid-dispatch): one log line each, naming the node and the RAM given back.
   */
  async endExpiredHolds(): Promise<void> {
    const now = this.clock.now();
    for (const nodeId of await this.nodes.nodesWithExpiredHolds(now)) {
      const ended = await this.nodes.update(nodeId, endExpiredHolds(now));
      for (const { hold } of ended) {
        const agoS = ((now - hold.expires_at_ms) / 1000).toFixed(1);
        this.logger.warn(
          `node ${nodeId}: RAM hold of ${hold.ram_mb} MB${hold.vm_id ? ` for vm ${hold.vm_id}` : ''} ended at its deadline (${agoS} s ago) before any heartbeat listed the VM`,
        );
      }
    }
  }
}

/** What becomes of a silent node's VMs, and what the operator can do. */
function describeSilentVms(state: NodeState): string {
  // Its own and those an earlier agent of its id listed (SilentVms): all may still run.
  const vms = [...state.vms, ...state.silent_vms.map((silent) => silent.vm)];
  const shown = vms.slice(0, 3).map((vm) => vm.vm_id);
  const more = vms.length > shown.length ? `, ${vms.length - shown.length} more` : '';
  return `its ${vms.length} VM(s) (${shown.join(', ')}${more}) may still run, unmanaged: they stay listed in GET /v1/vms with node_id ${state.node_id} until its agent heartbeats again (start it with the same VM_NODE_ID and VM_DISK_DIR), and a machine gone for good has each forgotten with DELETE /v1/vms/<vm_id>?forget=true`;
}

function byNodeId(a: NodeRecord, b: NodeRecord): number {
  return compareIds(a.node_id, b.node_id);
}
