import { rfc3339ToEpochNanos } from './rfc3339';
import { RESTORE_BACKUP_ID } from './wire/vm-restore';
import type { HeartbeatReplica } from './wire/vm-copies';

/** What the restore rules need of a live node. */
export interface RestoreNode {
  node_id: string;
  /** The VMs its agent lists. */
  vms: ReadonlyArray<{ vm_id: string }>;
  /** The copies of other nodes' VMs it holds. */
  replicas: readonly HeartbeatReplica[];
}

/** A restore as asked (RestoreVmRequest), and what the controller knows of the VM. */
export interface RestoreAsked {
  vmId: string;
  from?: string;
  to?: string;
  asNew: boolean;
  /** Whether the controller has any record of the VM (listed, silent or not). */
  known: boolean;
}

/**
 * Where a restore reads and where it makes the VM: the replica `to` holds, or a backup in
 * `to`'s VM_BACKUP_DIR (`backupId` undefined: its newest, asked of its agent); or why not.
 * `holder`: another live node holds the copy: `to` pulls it from there (a replica plan), or
 * does when that copy is newer than what `to` holds itself (a backup plan without backupId).
 */
export type RestorePlan =
  | { kind: 'replica'; to: string; copiedAt: string; holder?: string }
  | { kind: 'backup'; to: string; backupId?: string; holder?: string }
  | { kind: 'refused'; status: 404 | 409 | 422; message: string };

/** Where the VM's copies are, for a refusal to name: `node n2 (copied 2026-...)`, newest first. */
export function copyHoldersOf(vmId: string, live: readonly RestoreNode[]): string[] {
  return live
    .flatMap((node) =>
      node.replicas
        .filter((replica) => replica.vm_id === vmId)
        .map((replica) => ({ node: node.node_id, at: replica.copied_at })),
    )
    .sort((a, b) => compareStamps(b.at, a.at))
    .map(({ node, at }) => `node ${node} (copied ${at})`);
}

function compareStamps(a: string, b: string): number {
  const an = rfc3339ToEpochNanos(a) ?? 0n;
  const bn = rfc3339ToEpochNanos(b) ?? 0n;
  return an === bn ? 0 : an < bn ? -1 : 1;
}

function copiesText(vmId: string, live: readonly RestoreNode[]): string {
  const copies = copyHoldersOf(vmId, live);
  return copies.length === 0
    ? `no live node holds a copy of vm ${vmId}`
    : `copies of vm ${vmId} are on ${copies.join(', ')}`;
}

/**
 * The restore rules, on the live nodes only: a VM a live agent lists is refused (409) unless
 * restored as new; `from` a node names the replica it holds (restored there, or pulled from
 * there by `to`), `from` a backup id reads `to`'s VM_BACKUP_DIR (so `to` is needed); no `from`
 * takes the freshest replica (max copied_at) where it is, or with `to` the replica it holds,
 * else the newer of its backups and the freshest copy elsewhere (pulled; judged once the agents
 * are asked). No copy anywhere and no record of the VM: 404.
 */
export function planRestore(asked: RestoreAsked, live: readonly RestoreNode[]): RestorePlan {
  const { vmId, from, to, asNew } = asked;
  const runsOn = live.find((node) => node.vms.some((vm) => vm.vm_id === vmId));
  if (runsOn && !asNew) {
    return {
      kind: 'refused',
      status: 409,
      message: `vm ${vmId} still runs on node ${runsOn.node_id} (its live agent lists it): delete it there first, or restore it as a new VM beside it (as_new)`,
    };
  }
  const liveNode = (id: string) => live.find((node) => node.node_id === id);
  const replicaOn = (node: RestoreNode | undefined) =>
    node?.replicas.find((replica) => replica.vm_id === vmId);
  if (to !== undefined && !liveNode(to)) {
    return {
      kind: 'refused',
      status: 422,
      message: `to: node ${to} is not live (no heartbeat in the last 30 s); ${copiesText(vmId, live)}`,
    };
  }
  if (from !== undefined && RESTORE_BACKUP_ID.test(from)) {
    if (to === undefined) {
      return {
        kind: 'refused',
        status: 422,
        message: `to: a backup (from ${from}) is read from the VM_BACKUP_DIR of the node named by to; name that node`,
      };
    }
    return { kind: 'backup', to, backupId: from };
  }
  if (from !== undefined) {
    const source = liveNode(from);
    const replica = replicaOn(source);
    if (!source || !replica) {
      return {
        kind: 'refused',
        status: 422,
        message: `from: ${source ? `node ${from} holds no copy of vm ${vmId}` : `${from} is neither a live node nor a backup id (<chain_id>/<index>)`}; ${copiesText(vmId, live)}`,
      };
    }
    if (to !== undefined && to !== from) {
      return { kind: 'replica', to, copiedAt: replica.copied_at, holder: from };
    }
    return { kind: 'replica', to: from, copiedAt: replica.copied_at };
  }
  const freshest = freshestReplica(vmId, live);
  if (to !== undefined) {
    const replica = replicaOn(liveNode(to));
    if (replica) return { kind: 'replica', to, copiedAt: replica.copied_at };
    return freshest ? { kind: 'backup', to, holder: freshest.node } : { kind: 'backup', to };
  }
  if (freshest) {
    return { kind: 'replica', to: freshest.node, copiedAt: freshest.replica.copied_at };
  }
  return {
    kind: 'refused',
    status: asked.known ? 422 : 404,
    message: asked.known
      ? `vm ${vmId}: no live node holds a copy of it; restore it from a backup: from <backup_id> with to <node> (the node whose VM_BACKUP_DIR holds it)`
      : `vm ${vmId} is not known here and no live node holds a copy of it; restore it from a backup: from <backup_id> with to <node>`,
  };
}

/** The live node holding the VM's newest copy (max copied_at). */
function freshestReplica(
  vmId: string,
  live: readonly RestoreNode[],
): { node: string; replica: HeartbeatReplica } | undefined {
  let freshest: { node: string; replica: HeartbeatReplica } | undefined;
  for (const node of live) {
    const replica = node.replicas.find((held) => held.vm_id === vmId);
    if (
      replica &&
      (!freshest || compareStamps(replica.copied_at, freshest.replica.copied_at) > 0)
    ) {
      freshest = { node: node.node_id, replica };
    }
  }
  return freshest;
}
