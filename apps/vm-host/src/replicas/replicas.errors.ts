/** A transfer that does not fit this peer's copy of the VM (another chain, a wrong place): 409. */
export class ReplicaConflictError extends Error {}

/** No transfer under way by that id (ended, cut short, or this agent restarted): 404. */
export class ReplicaTransferGoneError extends Error {
  constructor(vmId: string, transferId: string) {
    super(
      `no transfer ${transferId} of vm ${vmId}'s copy is under way here (ended, or cut short): start it again`,
    );
  }
}

/** The copy would not fit in VM_DISK_DIR beside its reserve: 507. */
export class ReplicaNoRoomError extends Error {
  constructor(vmId: string, wantedBytes: number, roomBytes: number) {
    super(
      `no room for vm ${vmId}'s copy on this node: ${mb(wantedBytes)} MB to receive, ${mb(roomBytes)} MB free in VM_DISK_DIR beyond its reserve`,
    );
  }
}

/** A chunk or file that is not what the transfer announced (size, offset, a bad image): 422. */
export class ReplicaTransferInvalidError extends Error {}

function mb(bytes: number): string {
  return (Math.max(0, bytes) / 1e6).toFixed(1);
}

/** No such copy, chain or point on this node for a read: 404. */
export class ReplicaNotHeldError extends Error {}
