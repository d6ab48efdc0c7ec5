import { Injectable } from '@nestjs/common';
import { Clock, packageVersion } from '@app/daemon';
import {
  CreateVmRequest,
  FleetVm,
  FleetVmWithLifeCycle,
  MISSED_BEATS_TO_PASS_OVER,
  NodeState,
  PLACEMENT_MARGIN_MB,
  RestartVmRequest,
  RestoreVmRequest,
  RestoredVm,
  StopVmRequest,
  VmConsole,
  VmLifeCycle,
  beatIntervalMs,
  compareIds,
  isLive,
  liveSince,
  placeVm,
  placementCandidate,
  toRfc3339,
} from '@app/fleet-domain';
import { NodesRepository } from '../nodes/nodes.repository';
import { NodeDrains } from '../nodes/node-drains.repository';
import { drainReasonsOf, withDrainReason } from '../nodes/drained-nodes';
import { SharedRead } from '../operations/shared-read';
import {
  LISTING_BUSY_FACTOR,
  LISTING_MIN_INTERVAL_MS,
  VmOperationsService,
} from '../operations/vm-operations.service';
import { VmRestoreService } from '../operations/vm-restore.service';
import { VmPlacementService } from '../vms/vm-placement.service';
import { VmsService } from '../vms/vms.service';
import { ConsoleFilters, ConsoleNode, ConsoleOverview } from './console.views';
import { overviewLive } from './overview.views';

/** The console's most of a serial log per read: what the page shows and follows. */
export const CONSOLE_READ_BYTES = 64 * 1024;

/** What every console page of a moment is made of, read once for them all (see SharedRead). */
interface FleetSnapshot {
  taken_at: string;
  nodes: ConsoleNode[];
  vms: FleetVmWithLifeCycle[];
  /**
   * The overview part rendered, by filters and openness, for this snapshot only: as the bytes
   * sent (at 1,000 nodes about 3 MB, whose encoding alone would cost each poll milliseconds).
   */
  rendered: Map<string, Buffer>;
}

/** The most renderings of one snapshot kept (one per filter a page uses). */
const MAX_RENDERINGS = 64;

/**
 * What the web console reads and does, through the services the API and the operations
 * listener use, in this process: the fleet's nodes as the store has them (RAM, KVM, heartbeat
 * age, why placement passes one over), the VMs with their life cycles, and the actions. Every
 * page and tab reads one shared snapshot, taken at most once per LISTING_MIN_INTERVAL_MS, and
 * its overview is rendered once per filter: twenty tabs cost what one does. An action takes a
 * new snapshot at the next read, so its outcome shows at once.
 */
@Injectable()
export class ConsoleService {
  private readonly version = packageVersion();
  private readonly snapshot: SharedRead<FleetSnapshot>;

  constructor(
    private readonly nodes: NodesRepository,
    private readonly clock: Clock,
    private readonly vms: VmsService,
    private readonly operations: VmOperationsService,
    private readonly placement: VmPlacementService,
    private readonly restores: VmRestoreService,
    private readonly drains: NodeDrains,
  ) {
    this.snapshot = new SharedRead(clock, LISTING_MIN_INTERVAL_MS, LISTING_BUSY_FACTOR, () =>
      this.takeSnapshot(),
    );
  }

  private async takeSnapshot(): Promise<FleetSnapshot> {
    const [nodes, vms] = await Promise.all([this.readFleetNodes(), this.operations.listVms()]);
    return { taken_at: toRfc3339(this.clock.wallNow()), nodes, vms, rendered: new Map() };
  }

  /**
   * The fleet at a glance, the VMs filtered by tenant and node. `scope`: a tenant's session,
   * which sees its own VMs only, and of the nodes only those they are on (their ssh lines).
   */
  async overview(filters: ConsoleFilters, open: boolean, scope?: string): Promise<ConsoleOverview> {
    return this.overviewOf(await this.snapshot.get(), filters, open, scope);
  }

  /** The overview's live part (overviewLive) in UTF-8, rendered once per snapshot and filters. */
  async overviewLive(filters: ConsoleFilters, open: boolean, scope?: string): Promise<Buffer> {
    const snapshot = await this.snapshot.get();
    // The scope is part of the key: a tenant's rendering is never the operator's, nor theirs its.
    const key = JSON.stringify([filters.tenant ?? null, filters.node ?? null, open, scope ?? null]);
    let rendered = snapshot.rendered.get(key);
    if (rendered === undefined) {
      rendered = Buffer.from(
        overviewLive(this.overviewOf(snapshot, filters, open, scope)).text,
        'utf8',
      );
      if (snapshot.rendered.size < MAX_RENDERINGS) snapshot.rendered.set(key, rendered);
    }
    return rendered;
  }

  private overviewOf(
    { taken_at, nodes, vms }: FleetSnapshot,
    filters: ConsoleFilters,
    open: boolean,
    scope?: string,
  ): ConsoleOverview {
    if (scope !== undefined) {
      vms = vms.filter((vm) => vm.tenant_id === scope);
      const hosting = new Set(vms.map((vm) => vm.node_id));
      const own = new Set(vms.map((vm) => vm.vm_id));
      // Nothing of other tenants' VMs, not even their ids on a node's card.
      nodes = nodes
        .filter((node) => hosting.has(node.node_id))
        .map((node) => {
          const vmIds = node.vm_ids.filter((vmId) => own.has(vmId));
          return { ...node, vm_ids: vmIds, vm_count: vmIds.length };
        });
      filters = { ...filters, tenant: scope };
    }
    return {
      version: this.version,
      open,
      taken_at,
      nodes,
      vms: vms.filter(
        (vm) =>
          (filters.tenant === undefined || vm.tenant_id === filters.tenant) &&
          (filters.node === undefined || vm.node_id === filters.node),
      ),
      tenants: [...new Set(vms.map((vm) => vm.tenant_id).filter((id) => id !== null))].sort(
        compareIds,
      ),
      filters,
    };
  }

  /** One VM with its life cycle. */
  vm(vmId: string): Promise<FleetVmWithLifeCycle> {
    return this.operations.getVm(vmId);
  }

  createVm(request: CreateVmRequest): Promise<FleetVm> {
    return this.acted(this.placement.createVm(request).then(({ vm }) => vm));
  }

  stopVm(vmId: string, request: StopVmRequest): Promise<VmLifeCycle> {
    return this.acted(this.operations.stopVm(vmId, request));
  }

  startVm(vmId: string): Promise<VmLifeCycle> {
    return this.acted(this.operations.startVm(vmId));
  }

  restartVm(vmId: string): Promise<VmLifeCycle> {
    return this.acted(this.operations.restartVm(vmId, new RestartVmRequest()));
  }

  /** The VM restored from a copy or backup (the operations listener's restore). */
  restoreVm(vmId: string, request: RestoreVmRequest): Promise<RestoredVm> {
    return this.acted(this.restores.restore(vmId, request));
  }

  deleteVm(vmId: string, forget: boolean): Promise<void> {
    return this.acted(this.vms.deleteVm(vmId, forget));
  }

  /** An action's outcome, after which the pages read a new snapshot (not a new asking). */
  private async acted<T>(action: Promise<T>): Promise<T> {
    try {
      return await action;
    } finally {
      this.snapshot.expire();
    }
  }

  readConsole(vmId: string, from: number | undefined): Promise<VmConsole> {
    return this.operations.readConsole(vmId, { from, max_bytes: CONSOLE_READ_BYTES });
  }

  /**
   * Every stored node (the live ones, the silent ones kept for their VMs), by id; `scope`: a
   * tenant's session, which gets only the nodes of its VMs, as the overview gives it.
   */
  async fleetNodes(scope?: string): Promise<ConsoleNode[]> {
    const snapshot = await this.snapshot.get();
    return scope === undefined ? snapshot.nodes : this.overviewOf(snapshot, {}, false, scope).nodes;
  }

  private async readFleetNodes(): Promise<ConsoleNode[]> {
    const nowMs = this.clock.now();
    const wallNowMs = this.clock.wallNow();
    const notBefore = liveSince(nowMs);
    const stored = await this.nodes.listAll();
    const live = stored.filter((node) => isLive(node, notBefore));
    const drained = await this.drains.drainedSince();
    const reasons = drainReasonsOf(drained);
    const candidates = live.map((node) =>
      withDrainReason(placementCandidate(node, nowMs), reasons),
    );
    return stored
      .map((node) => ({
        ...consoleNode(node, nowMs, wallNowMs, isLive(node, notBefore), candidates),
        drained_since: drained.has(node.node_id) ? toRfc3339(drained.get(node.node_id)!) : null,
      }))
      .sort((a, b) => compareIds(a.node_id, b.node_id));
  }
}

/** A stored node as the console shows it, with why placement passes it over (null: it does not). */
export function consoleNode(
  node: NodeState,
  nowMs: number,
  wallNowMs: number,
  live: boolean,
  candidates: Parameters<typeof placeVm>[1],
): ConsoleNode {
  const candidate = candidates.find(({ node_id }) => node_id === node.node_id);
  const interval = beatIntervalMs(node);
  const silentMs = nowMs - node.received_at_ms;
  return {
    node_id: node.node_id,
    hostname: node.hostname,
    wg_ip: node.wg_ip,
    ram_total_mb: node.ram_total_mb,
    ram_used_mb: Math.min(node.ram_used_mb, node.ram_total_mb),
    ram_available_mb: candidate?.ram_available_mb ?? 0,
    kvm_available: node.kvm_available,
    reserved: node.reserved,
    vm_count: node.vms.length,
    disk_room: node.disk_room,
    heartbeat_age_s: Math.max(0, Math.round(silentMs / 1000)),
    last_heartbeat: toRfc3339(node.received_at_wall_ms),
    live,
    late: live && interval !== null && silentMs > MISSED_BEATS_TO_PASS_OVER * interval,
    passed_over: live
      ? passedOver(node, candidates)
      : `silent since ${toRfc3339(node.received_at_wall_ms)} (${Math.round((wallNowMs - node.received_at_wall_ms) / 1000)} s): out of placement until its agent heartbeats again`,
    vm_ids: node.vms.map((vm) => vm.vm_id),
    fenced_vm_ids: node.fenced_vm_ids,
  };
}

/** Why placement passes a live node over for any VM, in placement's own words; null if it does not. */
function passedOver(node: NodeState, candidates: Parameters<typeof placeVm>[1]): string | null {
  const asPreferred = placeVm(
    { ram_mb: 1, prefer_kvm: false, preferred_node: node.node_id },
    candidates,
  );
  if (asPreferred.kind !== 'placed') {
    return asPreferred.message.replace(`preferred_node ${node.node_id}: `, '');
  }
  const available = candidates.find(({ node_id }) => node_id === node.node_id)?.ram_available_mb;
  if (available !== undefined && available < 1 + PLACEMENT_MARGIN_MB) {
    return `has ${available} MB available: a VM needs its ram_mb + ${PLACEMENT_MARGIN_MB} MB`;
  }
  if (node.reserved) return 'reserved, used only when no other node fits';
  return null;
}
