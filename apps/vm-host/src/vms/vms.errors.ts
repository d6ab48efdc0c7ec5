import type { HostPort } from '@app/fleet-domain';

/**
 * The driver cannot make any VM now (e.g. the base image VM_BASE_IMAGE names is missing): a 503,
 * heard before the VM is accepted.
 */
export class VmCreationUnavailableError extends Error {}

/** The vm_id the controller sent with a spawn is already taken on this node: a 409. */
export class VmIdTakenError extends Error {
  constructor(readonly vmId: string) {
    super(`vm_id ${vmId} is already taken on this node; no VM was made`);
  }
}

/**
 * The spawn's deadline (the controller's, when it stops waiting) had passed by this agent's
 * clock when the spawn was read (the agent was frozen, the request held up): a 409, nothing made.
 */
export class SpawnDeadlinePassedError extends Error {
  constructor(deadline: string, nowMs: number) {
    super(
      `deadline ${deadline} had passed (this agent's clock reads ${new Date(nowMs).toISOString()}); the controller no longer waits for this spawn, so no VM was made`,
    );
  }
}

export class VmNotOnNodeError extends Error {
  constructor(readonly vmId: string) {
    super(`vm ${vmId} is not on this node`);
  }
}

/**
 * A driver could not make or start a VM; `step` says which part failed (e.g. disk, seed ISO),
 * `cause` keeps what failed, so a full or unwritable VM_DISK_DIR can be told apart.
 */
export class VmCreateError extends Error {
  constructor(
    readonly step: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * A host port of the VM's forwards is taken on VM_WG_IP (another process bound it while the VM
 * was stopped): the VM keeps its ports, so it is not started elsewhere; listed Error, naming it.
 */
export class VmPortTakenError extends VmCreateError {
  constructor(
    readonly port: HostPort,
    wgIp: string,
  ) {
    super(
      'ports',
      `host port ${port.host_port}/${port.protocol} on ${wgIp} (forwarded to guest port ${port.guest_port}) is taken by another process; the VM keeps its ports, so it starts once that port is free again`,
    );
  }
}

/**
 * A VM's sidecar exists but cannot be read or makes no sense (EACCES, EIO, damaged JSON). The
 * VM is kept and listed as Error: its process may run, and its files are not the agent's to drop.
 */
export class SidecarUnreadableError extends Error {
  constructor(
    readonly vmId: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`vm ${vmId}: sidecar unreadable (${reason})`, options);
  }
}

/**
 * A host_port the create asked for is in use or reserved on this node (a fleet daemon's, another
 * VM's, another process's): a 422 naming the port (the controller then tries another node).
 */
export class HostPortUnavailableError extends Error {}

/**
 * No free host port is left on VM_WG_IP for a new VM's forward (the kernel's range is bound, or
 * held by this node's VMs, stopped ones too): a capacity refusal like VmDoesNotFitError, a 422
 * naming the VM and the range (the controller then tries another node).
 */
export class HostPortsExhaustedError extends Error {}

/**
 * The node cannot hold the VM (RAM after the margin, vCPUs beyond the overcommit, its disk
 * beyond the disk room): a 422.
 */
export class VmDoesNotFitError extends Error {}

/** A disk_gb below the base image's size (the image would not fit its disk): a 422 naming both. */
export class VmDiskTooSmallError extends Error {}

/** What the file system said, for the errors that mean VM_DISK_DIR cannot take a VM. */
export const DISK_PROBLEMS = {
  ENOSPC: 'no space left on device',
  EDQUOT: 'disk quota exceeded',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
} as const;
export type DiskProblem = keyof typeof DISK_PROBLEMS;

/**
 * VM_DISK_DIR could not take a new VM's files; nothing of the VM was kept. `full` tells a full
 * disk (or quota) from a folder the agent may not write.
 */
export class VmDiskError extends Error {
  /** Out of space or quota, rather than not writable. */
  readonly full: boolean;

  constructor(
    readonly diskDir: string,
    readonly problem: DiskProblem,
    during: string,
  ) {
    super(
      `VM_DISK_DIR ${diskDir}: ${DISK_PROBLEMS[problem]} (${problem}) while ${during}; nothing of the VM was kept`,
    );
    this.full = problem === 'ENOSPC' || problem === 'EDQUOT';
  }
}

/** An Idempotency-Key header not in the form the fleet controller sends: a 400. */
export class IdempotencyKeyInvalidError extends Error {}

/** The same client key came with another request than the VM it made: a 422. */
export class IdempotencyKeyReusedError extends Error {}

/**
 * An operation the VM's current state does not allow (stop of a stopped VM, start of a running
 * one, any action while it is being created): a 409. The message names the VM and is one of a
 * few fixed forms (see VmActionConflictError.forms), so the controller can judge it.
 */
export class VmActionConflictError extends Error {
  static alreadyStopped(vmId: string): VmActionConflictError {
    return new VmActionConflictError(`vm ${vmId} is already stopped`);
  }
  static alreadyRunning(vmId: string): VmActionConflictError {
    return new VmActionConflictError(`vm ${vmId} is already running`);
  }
  static beingCreated(vmId: string): VmActionConflictError {
    return new VmActionConflictError(`vm ${vmId} is being created; try again once it is Running`);
  }
  static busy(vmId: string, operation: string): VmActionConflictError {
    return new VmActionConflictError(`vm ${vmId} is already ${operation}`);
  }
  static fenced(vmId: string): VmActionConflictError {
    return new VmActionConflictError(
      `vm ${vmId} is fenced: its node's lease ran out; it starts again once the node renews it`,
    );
  }
  static unreadable(vmId: string): VmActionConflictError {
    return new VmActionConflictError(
      `vm ${vmId} cannot be read on its node (sidecar unreadable); only a delete acts on it`,
    );
  }
}

/**
 * An interactive serial console refused (a 409 at the handshake), in one of a few fixed forms
 * the controller matches to word it itself (terminalRefusal in
 * apps/fleet/src/console/console-terminals.ts).
 */
export class VmTerminalRefusedError extends Error {
  static notRunning(vmId: string): VmTerminalRefusedError {
    return new VmTerminalRefusedError(`vm ${vmId} is not running`);
  }
  static inUse(vmId: string): VmTerminalRefusedError {
    return new VmTerminalRefusedError(
      `vm ${vmId}: its serial console is in use by another session`,
    );
  }
  static noSocket(vmId: string): VmTerminalRefusedError {
    return new VmTerminalRefusedError(`vm ${vmId} has no serial socket`);
  }
}

/** A VM's process outlived quit, SIGTERM and SIGKILL: its files are kept, the delete fails. */
export class VmStillRunningError extends Error {}

/** What an error says, for a log line or a sidecar; anything thrown that is not an Error, as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
