import type { Observable } from 'rxjs';
import type { CommittedVm, HeartbeatDiskRoom, HeartbeatVm } from '@app/fleet-domain';

/** A VM as the heartbeat reports it (HeartbeatVm): a VmRecord, plus the key it was made with. */
export type ReportedVm = HeartbeatVm;

/** What the heartbeat needs of this node's VMs. */
export interface NodeVmsReport {
  /** Every VM on the node. */
  vms: ReportedVm[];
  /** The VMs holding their RAM, for `ram_used_mb`. */
  committed: CommittedVm[];
  /** VM_DISK_DIR's room for VM disks, in MB; absent when it cannot be read. */
  diskRoom?: HeartbeatDiskRoom;
}

/**
 * This node's VMs as the heartbeat takes them (it depends on this module, never the other way
 * round). Every heartbeat carries all of them.
 */
export abstract class NodeVmsSource {
  /** Reconciles the VMs with what really runs, then reports them. */
  abstract report(): Promise<NodeVmsReport>;

  /**
   * Sets aside, never to run here again, the VMs the controller says were restored on another
   * node (the heartbeat answer's superseded_vm_ids); ids that are no VM here are passed over.
   */
  abstract supersede(vmIds: readonly string[]): Promise<void>;

  /** Emits when a VM was created or deleted here, so the controller hears of it at once. */
  abstract readonly changes: Observable<void>;
}
