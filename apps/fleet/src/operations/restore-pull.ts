import { Injectable } from '@nestjs/common';
import { Clock, signCopyReadGrant } from '@app/daemon';
import { NodeState, RestorePoint, RestorePull, rfc3339ToEpochNanos } from '@app/fleet-domain';
import { NodeTokens } from '../nodes/node-tokens';
import { VmRestoreRefusedError } from './vm-restore.errors';

/**
 * How long a read grant lets the restore's node read the copy on its holder: the restore's
 * own bound (the agent answers once the disk is whole), no longer.
 */
export const READ_GRANT_LIFE_MS = 30 * 60_000;

/** The newest of `points` (of `source` when given) taken at or before `at`. */
export function newestInTime(
  points: readonly RestorePoint[],
  at: string | undefined,
  source?: RestorePoint['source'],
): RestorePoint | undefined {
  const atNs = at === undefined ? undefined : rfc3339ToEpochNanos(at);
  let best: RestorePoint | undefined;
  for (const point of points) {
    if (source !== undefined && point.source !== source) continue;
    const taken = rfc3339ToEpochNanos(point.taken_at) ?? 0n;
    if (atNs != null && taken > atNs) continue;
    if (!best || taken > (rfc3339ToEpochNanos(best.taken_at) ?? 0n)) best = point;
  }
  return best;
}

/** Whether the copy elsewhere (`remote`) is newer than what the target holds (`local`). */
export function remoteIsNewer(
  local: RestorePoint | undefined,
  remote: RestorePoint | undefined,
): boolean {
  if (!remote) return false;
  if (!local) return true;
  return (rfc3339ToEpochNanos(remote.taken_at) ?? 0n) > (rfc3339ToEpochNanos(local.taken_at) ?? 0n);
}

/**
 * A restore onto a node that does not hold the copy: where its agent pulls it from (the
 * holder's agent) with a READ grant signed with the holder's node token, naming the VM, the
 * holder and the reading node, short-lived. The holder checks it with its own token; a node
 * with another node's token can neither make one nor use this one to write.
 */
@Injectable()
export class RestorePulls {
  constructor(
    private readonly nodeTokens: NodeTokens,
    private readonly clock: Clock,
  ) {}

  /** `moves`: the restore keeps the VM's id (not as a new VM beside it). */
  pullFrom(
    vmId: string,
    holder: NodeState,
    reader: NodeState,
    point: RestorePoint,
    moves: boolean,
  ): RestorePull {
    const token = this.nodeTokens.forAgent(holder.node_id, holder.credential);
    if ('unusable' in token) {
      throw new VmRestoreRefusedError(
        422,
        `vm ${vmId}: its copy on node ${holder.node_id} cannot be read from node ${reader.node_id}: the controller holds no token of node ${holder.node_id} to sign a read grant with (${token.unusable}); restore it on node ${holder.node_id}`,
      );
    }
    const nowMs = this.clock.wallNow();
    return {
      node_id: holder.node_id,
      address: `${holder.wg_ip.includes(':') ? `[${holder.wg_ip}]` : holder.wg_ip}:${holder.spawn_port}`,
      grant: signCopyReadGrant(token.token, {
        vm: vmId,
        holder: holder.node_id,
        reader: reader.node_id,
        issuedAtMs: nowMs,
        expiresAtMs: nowMs + READ_GRANT_LIFE_MS,
        moves,
      }),
      backup_id: point.backup_id,
    };
  }
}
