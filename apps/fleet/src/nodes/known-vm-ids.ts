/** Nodes whose last listed VM ids are kept (see KnownVmIds). */
const KNOWN_VM_IDS_NODES = 100_000;

type ListedVm = { readonly vm_id: string };

/**
 * The VM ids each node's last heartbeat taken here listed: a heartbeat listing none beyond
 * them needs no store read to be judged (see NodesService.withoutForeignVms). Forgotten whole
 * past `maxNodes` nodes.
 */
export class KnownVmIds {
  private readonly byNode = new Map<string, ReadonlySet<string>>();

  constructor(private readonly maxNodes = KNOWN_VM_IDS_NODES) {}

  /** Whether `vms` lists no VM but those the node's last heartbeat taken here listed. */
  listsOnlyKnown(nodeId: string, vms: readonly ListedVm[]): boolean {
    if (vms.length === 0) return true;
    const known = this.byNode.get(nodeId);
    return known !== undefined && vms.every((vm) => known.has(vm.vm_id));
  }

  /** The node's heartbeat listing `vms` was taken (its Set kept when they are the same ids). */
  taken(nodeId: string, vms: readonly ListedVm[]): void {
    if (this.byNode.size >= this.maxNodes) this.byNode.clear();
    const known = this.byNode.get(nodeId);
    if (known === undefined || !listsInOrder(known, vms)) {
      this.byNode.set(nodeId, new Set(vms.map((vm) => vm.vm_id)));
    }
  }
}

/** Whether `vms` are the ids of `known` in its order: the Set they would make is the same. */
function listsInOrder(known: ReadonlySet<string>, vms: readonly ListedVm[]): boolean {
  if (known.size !== vms.length) return false;
  let index = 0;
  for (const vmId of known) if (vms[index++].vm_id !== vmId) return false;
  return true;
}
