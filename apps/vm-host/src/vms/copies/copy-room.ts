import { statfs } from 'node:fs/promises';
import { diskReserveBytes } from '@app/fleet-domain';
import type { VmDiskRoom } from '../admission/vm-disk-room';
import type { VmSidecars } from '../files/vm-sidecars';

/**
 * The room a copy may take in `diskDir`, a peer's received copy and a restore's pull alike:
 * the free space beyond the reserve, and never the room already promised to this node's own
 * VMs' disks (their committable room, as admission counts it). Without `diskRoom` (a unit
 * test's service) the free space alone.
 */
export async function copyRoomBytes(
  diskDir: string,
  diskRoom?: VmDiskRoom,
  sidecars?: VmSidecars,
): Promise<number> {
  const found = await statfs(diskDir);
  const total = found.blocks * found.bsize;
  const free = Math.max(0, found.bavail * found.bsize - diskReserveBytes(total));
  const own = diskRoom && sidecars ? await diskRoom.room(await sidecars.all()) : undefined;
  return own === undefined ? free : Math.max(0, Math.min(free, own.committableBytes));
}
