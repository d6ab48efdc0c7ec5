import { AgentRestoreRequest, GIB, rfc3339ToEpochNanos } from '@app/fleet-domain';
import type { VmCopier } from './vm-copier';
import { RestoreSourceError } from './vm-restores.errors';

/**
 * Refuses a restored disk larger than the VM was given: its virtual size beyond `limitBytes`
 * (the request's disk_gb, else the base image's size), which admission counted against the
 * node's disk room. A copy from elsewhere (a holder's, a backup folder's) cannot so take more
 * room than the VM's own disk would. Unknown sizes (qemu-img says none) are not judged.
 */
export async function checkRestoredSize(
  copier: VmCopier,
  disk: string,
  limitBytes: number | undefined,
  from: string,
): Promise<void> {
  if (limitBytes === undefined) return;
  const { virtualSizeBytes } = await copier.describe(disk);
  if (virtualSizeBytes !== null && virtualSizeBytes > limitBytes) {
    throw new RestoreSourceError(
      `source: the disk of ${from} is ${(virtualSizeBytes / GIB).toFixed(1)} GiB, more than the VM's ${(limitBytes / GIB).toFixed(1)} GiB (its disk_gb, else the base image's size)`,
    );
  }
}

/**
 * The moment a restore from this node's copy is recorded on its grant floor: the controller's
 * issued_at (its clock, as the copy grants' issued-at are), else this node's clock (an older
 * controller).
 */
export function restoredAtMs(request: AgentRestoreRequest, nowMs = Date.now()): number {
  const ns = request.issued_at === undefined ? null : rfc3339ToEpochNanos(request.issued_at);
  return ns === null ? nowMs : Number(ns / 1_000_000n);
}
