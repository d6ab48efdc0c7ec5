/** The base image VM_BASE_IMAGE names does not exist: this node cannot make VMs now. */
export class BaseImageMissingError extends Error {}

export class VmNotOnNodeError extends Error {
  constructor(readonly vmId: string) {
    super(`vm ${vmId} is not on this node`);
  }
}

/** A driver could not make or start a VM; `step` says which part failed (disk, seed ISO, QEMU). */
export class VmCreateError extends Error {
  constructor(
    readonly step: string,
    message: string,
  ) {
    super(message);
  }
}
