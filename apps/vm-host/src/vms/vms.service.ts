import { Injectable } from '@nestjs/common';
import { Subject } from 'rxjs';
import { NodeVmsSource, ReportedVm } from '../heartbeat/node-vms.source';

/** This node's VMs. */
@Injectable()
export class VmsService extends NodeVmsSource {
  private readonly changed = new Subject<void>();
  readonly changes = this.changed.asObservable();

  list(): Promise<ReportedVm[]> {
    return Promise.resolve([]);
  }
}
