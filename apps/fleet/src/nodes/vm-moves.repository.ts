/** Where a VM was restored to, and when (the controller's wall clock, ms). */
export interface VmMove {
  nodeId: string;
  atWallMs: number;
}

/**
 * The VMs restored onto another node (POST /v1/vms/{vm_id}/restore, not as new): vm id to the
 * node that runs it since. A heartbeat of any other node listing the VM is answered with it in
 * superseded_vm_ids, so that node's agent sets its stale copy aside and never starts it again.
 * Kept in the same store as the nodes and key claims (memory or Redis), so every controller on
 * it answers the same; bound by NodesModule beside them.
 */
export abstract class VmMoves {
  /** Records (or replaces) where the VM runs now. */
  abstract record(vmId: string, move: VmMove): Promise<void>;

  /** Of `vmIds`, those restored somewhere, each with its move. */
  abstract movesOf(vmIds: readonly string[]): Promise<Map<string, VmMove>>;

  /** True when no move is recorded, known without a read (memory); false: it cannot tell. */
  noneRecorded(): boolean {
    return false;
  }
}

/** `<node id>\n<at ms>`: a node id holds no newline. */
export function encodeVmMove(move: VmMove): string {
  return `${move.nodeId}\n${Math.floor(move.atWallMs)}`;
}

export function decodeVmMove(text: string | null | undefined): VmMove | undefined {
  const [nodeId, at, ...rest] = (text ?? '').split('\n');
  if (!nodeId || rest.length > 0 || !/^[0-9]{1,16}$/.test(at ?? '')) return undefined;
  return { nodeId, atWallMs: Number(at) };
}
