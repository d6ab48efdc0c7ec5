import {
  NodeState,
  RestorePoint,
  RestorePoints,
  RestoreVmRequest,
  copyHoldersOf,
  rfc3339ToEpochNanos,
} from '@app/fleet-domain';
import { VmRestoreRefusedError } from './vm-restore.errors';

/** The point the plan names among those the target's agent holds, or why none serves. */
export function chooseRestorePoint(
  vmId: string,
  target: NodeState,
  plan: { kind: 'replica' | 'backup'; backupId?: string },
  points: RestorePoints,
  request: RestoreVmRequest,
  known: boolean,
  live: readonly NodeState[],
  /** A copy elsewhere can serve: none here is no refusal (undefined). */
  elsewhereServes = false,
): RestorePoint | undefined {
  const atNs = request.at === undefined ? undefined : rfc3339ToEpochNanos(request.at);
  // `to` alone (no backup named): whatever that node holds, its copy or its backups, newest
  // first; its copy also when its heartbeat did not report it (an agent before copies' reports).
  const anyHeld = plan.kind === 'backup' && plan.backupId === undefined;
  const of = points.points.filter((point) => anyHeld || point.source === plan.kind);
  const named =
    plan.backupId === undefined
      ? of
      : of.filter(
          (point) =>
            point.backup_id === plan.backupId || point.backup_id.startsWith(`${plan.backupId}/`),
        );
  const inTime = named
    .filter((point) => atNs == null || (rfc3339ToEpochNanos(point.taken_at) ?? 0n) <= atNs)
    .sort((a, b) => {
      const an = rfc3339ToEpochNanos(a.taken_at) ?? 0n;
      const bn = rfc3339ToEpochNanos(b.taken_at) ?? 0n;
      return an === bn ? 0 : an > bn ? -1 : 1;
    });
  if (inTime[0] || elsewhereServes) return inTime[0];
  const elsewhere = copyHoldersOf(vmId, live);
  const where =
    elsewhere.length === 0
      ? `no live node holds a copy of vm ${vmId}`
      : `copies of vm ${vmId} are on ${elsewhere.join(', ')}`;
  const what =
    plan.kind === 'replica'
      ? `node ${target.node_id} holds no readable copy of vm ${vmId}`
      : plan.backupId !== undefined
        ? `from: node ${target.node_id} has no backup ${plan.backupId} of vm ${vmId} in its VM_BACKUP_DIR`
        : `to: node ${target.node_id} holds no copy and no backup of vm ${vmId}`;
  const late = named.length > 0 ? `at: none was taken at or before ${request.at}` : undefined;
  if (!known && named.length === 0 && plan.backupId === undefined && elsewhere.length === 0) {
    throw new VmRestoreRefusedError(404, `vm ${vmId} is not known here, and ${what}; ${where}`);
  }
  throw new VmRestoreRefusedError(422, `${late ?? what}; ${where}`);
}
