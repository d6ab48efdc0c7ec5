/** Which VMs the stored nodes list, and which node holds which VM id (pure rules). */
import { HeartbeatVm } from './wire/heartbeat-vm';
import { NodeState, isLive } from './node-state';

/**
 * Whether a node that drops out (silent for more than 30 s) is kept, out of every node listing
 * and of placement, for its VMs: when it listed any (or kept SilentVms). Its agent may be
 * stopped while its QEMU processes run on (systemctl stop leaves them), so its last-reported
 * VMs stay listed (GET /v1/vms), each with its node, until the node heartbeats again (which
 * replaces those it lists; those it does not list stay, as SilentVms), they are forgotten one
 * by one (forgetSilentVm), or SILENT_NODES_KEPT newer silent nodes push it out. A node that
 * listed none is dropped whole.
 */
export function keepsVmsWhenSilent(state: Pick<NodeState, 'vms' | 'silent_vms'>): boolean {
  return state.vms.length > 0 || state.silent_vms.length > 0;
}

/** A VM as GET /v1/vms lists it: on `node`, whose agent is silent since `silent_since_wall_ms`. */
export interface ListedVm {
  vm: HeartbeatVm;
  node: NodeState;
  /** Set for a VM no live agent manages: its node dropped out, or it is a SilentVm. */
  silent_since_wall_ms?: number;
}

/**
 * Every VM the stored nodes list, as of `notBeforeMs` (liveSince of now): those of live nodes,
 * then the last-reported ones of silent nodes and the SilentVms, except any a live node lists
 * (its report is the fresher one: no VM is listed twice).
 */
export function listedVms(nodes: readonly NodeState[], notBeforeMs: number): ListedVm[] {
  const listed: ListedVm[] = [];
  const managed = new Set<string>();
  for (const node of nodes) {
    if (!isLive(node, notBeforeMs)) continue;
    for (const vm of node.vms) {
      listed.push({ vm, node });
      managed.add(vm.vm_id);
    }
  }
  for (const node of nodes) {
    if (!isLive(node, notBeforeMs)) {
      for (const vm of node.vms) {
        if (!managed.has(vm.vm_id)) {
          listed.push({ vm, node, silent_since_wall_ms: node.received_at_wall_ms });
        }
      }
    }
    for (const silent of node.silent_vms) {
      if (!managed.has(silent.vm.vm_id)) {
        listed.push({ vm: silent.vm, node, silent_since_wall_ms: silent.silent_since_wall_ms });
      }
    }
  }
  return listed;
}

/** A VM a heartbeat lists whose id another stored node holds: ignored for that heartbeat. */
export interface ForeignVm {
  vm_id: string;
  /** The node that holds the id: it listed the VM first, or the controller dispatched it there. */
  owner: string;
}

/**
 * Every VM id a stored node holds: those it lists, its SilentVms and its holds' minted ids. The
 * Redis store's scripts say the same in Lua (redis-nodes.repository.ts, heldVmIds): change both.
 */
export function heldVmIds(node: NodeState): string[] {
  const ids = node.vms.map((vm) => vm.vm_id);
  for (const silent of node.silent_vms) ids.push(silent.vm.vm_id);
  for (const holdId in node.holds) {
    const vmId = node.holds[holdId].vm_id;
    if (vmId !== undefined) ids.push(vmId);
  }
  return ids;
}

/** What a change of one node's state does to the VM ids it holds (see heldVmIds). */
export interface HeldVmIdChanges {
  readonly gained: readonly string[];
  readonly lost: readonly string[];
}

const NO_HELD_VM_ID_CHANGES: HeldVmIdChanges = Object.freeze({ gained: [], lost: [] });

/**
 * The VM ids a node comes to hold and those it stops holding as its stored state goes from
 * `before` to `after` (undefined: none stored): what a store's index of VM ids follows.
 */
export function heldVmIdChanges(
  before: NodeState | undefined,
  after: NodeState | undefined,
): HeldVmIdChanges {
  // A heartbeat listing what the last one did, in the same order: the usual case, no arrays.
  if (before && after && listsAlike(before, after)) return NO_HELD_VM_ID_CHANGES;
  const held = before ? heldVmIds(before) : [];
  const holds = after ? heldVmIds(after) : [];
  if (held.length === holds.length && held.every((vmId, index) => vmId === holds[index])) {
    return NO_HELD_VM_ID_CHANGES;
  }
  const had = new Set(held);
  const has = new Set(holds);
  return {
    gained: [...has].filter((vmId) => !had.has(vmId)),
    lost: [...had].filter((vmId) => !has.has(vmId)),
  };
}

/**
 * Of `vmIds`, those a node of `stored` other than `exceptNodeId` holds (see heldVmIds), each
 * with the first such node: what a store without an index of VM ids (or whose index is not
 * complete) answers NodesRepository.ownersOf with. Reads every node.
 */
export function vmOwnersAmong(
  stored: readonly NodeState[],
  vmIds: readonly string[],
  exceptNodeId: string,
): Map<string, string> {
  const wanted = new Set(vmIds);
  const owners = new Map<string, string>();
  for (const node of stored) {
    if (node.node_id === exceptNodeId) continue;
    for (const vmId of heldVmIds(node)) {
      if (wanted.has(vmId) && !owners.has(vmId)) owners.set(vmId, node.node_id);
    }
  }
  return owners;
}

/**
 * The VMs of a heartbeat whose ids another stored node (live or silent) holds: a VM id belongs
 * to the first node that listed it (Kubernetes' NodeRestriction: a kubelet modifies only the
 * pods bound to it). Such a VM is not listed twice, and nothing is routed to the claimer.
 * `owners`: for ids of `vms`, a node other than the heartbeat's holding it
 * (NodesRepository.ownersOf); `known`: ids the node itself held already, never foreign.
 */
export function foreignVms(
  vms: readonly HeartbeatVm[],
  owners: ReadonlyMap<string, string>,
  known: ReadonlySet<string> = new Set(),
): ForeignVm[] {
  const foreign: ForeignVm[] = [];
  for (const vm of vms) {
    if (known.has(vm.vm_id)) continue;
    const owner = owners.get(vm.vm_id);
    if (owner !== undefined) foreign.push({ vm_id: vm.vm_id, owner });
  }
  return foreign;
}

/** Whether both list the same VMs in the same order, neither holding a VM otherwise. */
function listsAlike(before: NodeState, after: NodeState): boolean {
  if (before.silent_vms.length > 0 || after.silent_vms.length > 0) return false;
  if (holdsAnyVm(before.holds) || holdsAnyVm(after.holds)) return false;
  if (before.vms.length !== after.vms.length) return false;
  for (let index = 0; index < before.vms.length; index++) {
    if (before.vms[index].vm_id !== after.vms[index].vm_id) return false;
  }
  return true;
}

function holdsAnyVm(holds: NodeState['holds']): boolean {
  for (const holdId in holds) if (holds[holdId].vm_id !== undefined) return true;
  return false;
}
