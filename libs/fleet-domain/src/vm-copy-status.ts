import type { NodeState } from './node-state';
import { isLive } from './node-state';
import { rfc3339ToEpochNanos } from './rfc3339';
import type { HeartbeatVm } from './wire/heartbeat-vm';

/** A copy of a VM that a live node says it holds (its heartbeat's replicas). */
export interface HeldCopy {
  vm_id: string;
  /** The node holding the copy. */
  node_id: string;
  /** The node that sent it (the VM's node then). */
  source_node_id: string;
  copied_at: string;
  size_bytes: number;
}

/** The copies live nodes hold, by VM id; built once per read of the nodes, shared by every VM. */
export type CopiesByVm = ReadonlyMap<string, readonly HeldCopy[]>;

/** What a listed VM shows of its copies (FleetVm's copied_at and copy_node_id). */
export interface CopyFields {
  copied_at: string | null;
  copy_node_id: string | null;
}

/**
 * Every copy the live nodes (heard from at or after `notBeforeMs`) hold, by VM id. A silent
 * node's copies are not counted: nothing says they are still there.
 */
export function copiesHeld(
  nodes: readonly NodeState[],
  notBeforeMs: number,
): Map<string, HeldCopy[]> {
  const byVm = new Map<string, HeldCopy[]>();
  for (const node of nodes) {
    if (!isLive(node, notBeforeMs)) continue;
    for (const replica of node.replicas) {
      // A node's "copy" of a VM it sent itself protects nothing.
      if (replica.source_node_id === node.node_id) continue;
      const held: HeldCopy = {
        vm_id: replica.vm_id,
        node_id: node.node_id,
        source_node_id: replica.source_node_id,
        copied_at: replica.copied_at,
        size_bytes: replica.size_bytes,
      };
      const copies = byVm.get(replica.vm_id);
      if (copies === undefined) byVm.set(replica.vm_id, [held]);
      else copies.push(held);
    }
  }
  return byVm;
}

/** Newest first; unreadable stamps (never from a validated heartbeat) last; then by holder. */
function fresherFirst(a: HeldCopy, b: HeldCopy): number {
  const at = rfc3339ToEpochNanos(a.copied_at);
  const bt = rfc3339ToEpochNanos(b.copied_at);
  if (at !== bt) {
    if (at === null) return 1;
    if (bt === null) return -1;
    return at > bt ? -1 : 1;
  }
  return a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0;
}

/**
 * The copies of `vmId` held on nodes other than `vmNodeId` (its node), freshest first. Those sent
 * by another node than `vmNodeId` (before a restore, or by an agent that once ran it) come too:
 * `source_node_id` tells them apart.
 */
export function copiesOf(held: CopiesByVm, vmId: string, vmNodeId: string): HeldCopy[] {
  return (held.get(vmId) ?? []).filter((copy) => copy.node_id !== vmNodeId).sort(fresherFirst);
}

/**
 * The VM's freshest copy that protects it now: sent by its node (`vmNodeId`), held by a live
 * node other than it. undefined when none.
 */
export function freshestCopy(
  held: CopiesByVm,
  vmId: string,
  vmNodeId: string,
): HeldCopy | undefined {
  let freshest: HeldCopy | undefined;
  for (const copy of held.get(vmId) ?? []) {
    if (copy.source_node_id !== vmNodeId || copy.node_id === vmNodeId) continue;
    if (freshest === undefined || fresherFirst(copy, freshest) < 0) freshest = copy;
  }
  return freshest;
}

/**
 * What a listed VM shows of its copies: its freshest copy (null, null while none). undefined, the
 * fields left out, for a VM the controller does not track copies of: its agent reports no copy
 * policy (an agent before copies) and no node holds a copy of it.
 */
export function copyFieldsOf(
  held: CopiesByVm,
  vm: Pick<HeartbeatVm, 'vm_id' | 'copies'>,
  vmNodeId: string,
): CopyFields | undefined {
  const freshest = freshestCopy(held, vm.vm_id, vmNodeId);
  if (freshest !== undefined) {
    return { copied_at: freshest.copied_at, copy_node_id: freshest.node_id };
  }
  if (vm.copies === undefined) return undefined;
  return { copied_at: null, copy_node_id: null };
}
