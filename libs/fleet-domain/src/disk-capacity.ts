/** Bytes in a GiB, the unit disk_gb and the disk refusals speak in. */
export const GIB = 1024 * 1024 * 1024;

/** Largest disk a create may ask for (disk_gb): 16 TiB. */
export const MAX_VM_DISK_GB = 16 * 1024;

/** The reserve is this share of VM_DISK_DIR's file system... */
const RESERVE_SHARE = 0.05;
/** ...but never more than this. */
const RESERVE_MAX_BYTES = 2 * GIB;

/** VM_DISK_DIR's file system as statfs reports it to the agent. */
export interface DiskDirSpace {
  /** The file system's size. */
  totalBytes: number;
  /** What the agent may still write (f_bavail). */
  availableBytes: number;
}

/** A VM's disk on the node: committed at its virtual size, holding what it has written. */
export interface CommittedDisk {
  virtualBytes: number;
  /** What its file holds on the file system now (blocks allocated). */
  allocatedBytes: number;
}

/**
 * Room VM_DISK_DIR keeps beyond every VM disk at its virtual size: 5% of its file system, at
 * most 2 GiB. It takes what no disk's virtual size counts: qcow2's own tables (about 0.02% of a
 * disk), the seed ISOs, the serial logs (8 MiB each, and the previous boot's), the sidecars: at
 * worst about 17 MiB per VM, so 2 GiB for about 120 VMs all at once; 5% keeps a small file
 * system usable.
 */
export function diskReserveBytes(totalBytes: number): number {
  return Math.min(Math.floor(totalBytes * RESERVE_SHARE), RESERVE_MAX_BYTES);
}

function sum(disks: readonly CommittedDisk[], value: (disk: CommittedDisk) => number): number {
  return disks.reduce((total, disk) => total + value(disk), 0);
}

/** What disks can be given on the node, and what they are given. */
export interface DiskRoom {
  /** Room for VM disks: available now, plus what VM disks hold already, less the reserve. */
  roomBytes: number;
  reserveBytes: number;
  /** Their virtual sizes together may reach roomBytes x overcommit. */
  overcommit: number;
  committedBytes: number;
  /** What one more disk may still have at its virtual size. */
  committableBytes: number;
}

/**
 * VM_DISK_DIR's room for VM disks, like RAM's: every VM's disk (of any state: a stopped VM's
 * disk is kept and started again) counted at its virtual size, so none can write the room
 * another was given. Anything else written there (a deleted VM's disk while kept, the base
 * image) is taken off the room. `overcommit` above 1 is thin provisioning: virtual sizes may
 * then add up to that many times the room, and a full file system pauses the VM that writes.
 */
export function diskRoom(
  space: DiskDirSpace,
  disks: readonly CommittedDisk[],
  overcommit: number,
): DiskRoom {
  const reserveBytes = diskReserveBytes(space.totalBytes);
  const roomBytes = Math.max(
    0,
    space.availableBytes + sum(disks, (disk) => disk.allocatedBytes) - reserveBytes,
  );
  const committedBytes = sum(disks, (disk) => disk.virtualBytes);
  const committableBytes = Math.max(0, Math.floor(roomBytes * overcommit) - committedBytes);
  return { roomBytes, reserveBytes, overcommit, committedBytes, committableBytes };
}

/** Bytes as GiB with one decimal (rounded down), as the refusals print them; MiB below 1 GiB. */
export function gibText(bytes: number): string {
  if (bytes < GIB) return `${Math.floor(bytes / (1024 * 1024))} MiB`;
  return `${(Math.floor((bytes / GIB) * 10) / 10).toFixed(1)} GiB`;
}

/**
 * Why a disk of `wanted` (its virtual size, and what its file holds already when it exists)
 * does not fit beside `others`, naming disk_gb and the node's room; undefined when it fits.
 */
export function diskRefusal(
  wanted: CommittedDisk,
  space: DiskDirSpace,
  others: readonly CommittedDisk[],
  overcommit: number,
): string | undefined {
  const room = diskRoom(space, [...others, { ...wanted, virtualBytes: 0 }], overcommit);
  if (wanted.virtualBytes <= room.committableBytes) return undefined;
  const thin = overcommit === 1 ? '' : ` x VM_DISK_OVERCOMMIT ${overcommit}`;
  return `disk_gb: ${gibText(wanted.virtualBytes)} does not fit in this node's disk room: ${gibText(room.committableBytes)} committable of ${gibText(room.roomBytes)} room in VM_DISK_DIR${thin} (reserve ${gibText(room.reserveBytes)}, ${gibText(room.committedBytes)} committed to ${others.length} other VM disk(s))`;
}

/**
 * Whether a VM paused on a full file system may be resumed: more than the reserve is
 * available again, so its next writes land.
 */
export function diskHasRoomAgain(space: DiskDirSpace): boolean {
  return space.availableBytes > diskReserveBytes(space.totalBytes);
}

/**
 * A heartbeat's disk room as the console and `ppn-fleet status` show it: what one more disk may
 * still have, of all VM disks may have (the room times the overcommit), in GiB rounded down:
 * `12.0 / 40.0 GiB`.
 */
export function diskRoomText(room: {
  room_mb: number;
  committable_mb: number;
  overcommit: number;
}): string {
  const gib = (mb: number): string => (Math.floor((mb / 1024) * 10) / 10).toFixed(1);
  return `${gib(room.committable_mb)} / ${gib(room.room_mb * room.overcommit)} GiB`;
}
