import type { Observable } from 'rxjs';
import type { HeartbeatBody } from './fleet.client';

export type ReportedVm = HeartbeatBody['vms'][number];

/** Where the heartbeat gets this node's VMs from. Every heartbeat carries all of them. */
export abstract class NodeVmsSource {
  abstract list(): Promise<ReportedVm[]>;

  /** Emits when a VM was created or deleted here, so the controller hears of it at once. */
  abstract readonly changes: Observable<void>;
}
