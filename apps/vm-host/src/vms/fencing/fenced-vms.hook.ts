import { Injectable } from '@nestjs/common';
import { HostMetrics } from '../../metrics/host-metrics.service';
import { VmMove, VmPhase, VmTransitionHook } from '../life-cycle/vm-transitions';

/**
 * The VMs in the life cycle's `fenced` phase, as the table's moves say (a hook, so no other
 * path can fence or unfence one unseen): what the heartbeat lists as `fenced_vm_ids` and the
 * `ppn_vm_host_fenced_vms` gauge shows.
 */
@Injectable()
export class FencedVms implements VmTransitionHook {
  readonly name = 'fenced-vms';
  private readonly fenced = new Set<string>();

  constructor(private readonly metrics: HostMetrics) {}

  moved({ vmId, from, to }: VmMove): void {
    if (to === VmPhase.Fenced) this.fenced.add(vmId);
    else if (from === VmPhase.Fenced) this.fenced.delete(vmId);
    else return;
    this.metrics.observeFenced(this.fenced.size);
  }

  has(vmId: string): boolean {
    return this.fenced.has(vmId);
  }

  /** The fenced VMs' ids, sorted. */
  ids(): string[] {
    return [...this.fenced].sort();
  }
}
