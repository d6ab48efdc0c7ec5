import { HeldVmIdChanges, NodeState, heldVmIdChanges } from '@app/fleet-domain';

/**
 * VM id → the ids of the stored nodes holding it (heldVmIds), first holder first: a heartbeat's
 * VM ids are judged by looking these up, not by reading every node. Nearly every VM has one
 * holder, kept as a bare string; an array only for an id two nodes hold (both listed it at
 * once, before either heartbeat was stored).
 */
export class VmHolderIndex {
  private readonly holders = new Map<string, string | string[]>();

  /**
   * Follows one node's state from `before` to `after` (undefined: not stored); `changes`: their
   * heldVmIdChanges, when the caller has them already.
   */
  replace(
    nodeId: string,
    before: NodeState | undefined,
    after: NodeState | undefined,
    changes?: HeldVmIdChanges,
  ): void {
    if (before === after) return;
    const { gained, lost } = changes ?? heldVmIdChanges(before, after);
    for (const vmId of lost) this.remove(vmId, nodeId);
    for (const vmId of gained) this.add(vmId, nodeId);
  }

  /** The nodes recorded as holding `vmId`, first holder first (a copy). */
  holdersOf(vmId: string): string[] {
    const holders = this.holders.get(vmId);
    if (holders === undefined) return [];
    return typeof holders === 'string' ? [holders] : [...holders];
  }

  /** Every VM id some node is recorded as holding. */
  vmIds(): string[] {
    return [...this.holders.keys()];
  }

  remove(vmId: string, nodeId: string): void {
    const holders = this.holders.get(vmId);
    if (holders === nodeId) {
      this.holders.delete(vmId);
    } else if (Array.isArray(holders)) {
      const rest = holders.filter((holder) => holder !== nodeId);
      this.holders.set(vmId, rest.length === 1 ? rest[0] : rest);
    }
  }

  private add(vmId: string, nodeId: string): void {
    const holders = this.holders.get(vmId);
    if (holders === undefined) this.holders.set(vmId, nodeId);
    else if (typeof holders === 'string') {
      if (holders !== nodeId) this.holders.set(vmId, [holders, nodeId]);
    } else if (!holders.includes(nodeId)) holders.push(nodeId);
  }
}
