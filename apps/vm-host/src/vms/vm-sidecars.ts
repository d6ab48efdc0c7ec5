import { Injectable, Logger } from '@nestjs/common';
import { toRfc3339 } from '@app/fleet-domain';
import type { DriverRecord } from './vm-driver';
import { VmFiles, VmSidecar } from './vm-files';
import { SidecarUnreadableError } from './vms.errors';

/** A record for a VM whose driver data is lost: the driver finds its processes by name alone. */
export const NO_RECORD: DriverRecord = { kind: 'none' };

/**
 * The VMs' sidecars as the services read them: one that cannot be read becomes a stand-in
 * listed as Error (logged once per reason), so the VM is neither dropped nor its files removed.
 */
@Injectable()
export class VmSidecars {
  private readonly logger = new Logger('Vms');
  /** Stand-ins for sidecars that could not be read: never written back, never acted on. */
  private readonly standIns = new WeakSet<VmSidecar>();
  /** Why each VM's sidecar could not be read, as last logged (one line per new reason). */
  private readonly unreadable = new Map<string, string>();

  constructor(private readonly files: VmFiles) {}

  /** Every VM's sidecar (or stand-in), in vm id order. */
  async all(): Promise<VmSidecar[]> {
    const sidecars: VmSidecar[] = [];
    for (const vmId of await this.files.listVmIds()) {
      const sidecar = await this.of(vmId);
      if (sidecar) sidecars.push(sidecar);
    }
    return sidecars;
  }

  /** The VM's sidecar, undefined when it has none; a stand-in when it cannot be read. */
  async of(vmId: string): Promise<VmSidecar | undefined> {
    try {
      const sidecar = await this.files.readSidecar(vmId);
      this.unreadable.delete(vmId);
      return sidecar;
    } catch (error) {
      if (!(error instanceof SidecarUnreadableError)) throw error;
      if (this.unreadable.get(vmId) !== error.message) {
        this.unreadable.set(vmId, error.message);
        this.logger.error(
          `${error.message}: kept and listed as Error, its process and files left alone until it is deleted`,
        );
      }
      return this.standIn(vmId, `sidecar unreadable (${error.reason})`);
    }
  }

  /** True for what `of` gave in place of a sidecar it could not read. */
  isStandIn(sidecar: VmSidecar): boolean {
    return this.standIns.has(sidecar);
  }

  /** Forgets the VM once it is deleted, so a new unreadable sidecar of that id is logged. */
  forget(vmId: string): void {
    this.unreadable.delete(vmId);
  }

  /** What is listed of a VM whose sidecar cannot be read: its id, state Error, and why. */
  private standIn(vmId: string, why: string): VmSidecar {
    const sidecar: VmSidecar = {
      vm_id: vmId,
      vm_type: 'unknown',
      tenant_id: null,
      // Not known without the sidecar; the least the wire allows.
      ram_alloc_mb: 1,
      vcpu_count: 1,
      host_ports: [],
      created_at: toRfc3339(0),
      started_at: null,
      error: `${why}; its type, RAM and vCPUs are not known`,
      driver: NO_RECORD,
      idempotency_key: null,
    };
    this.standIns.add(sidecar);
    return sidecar;
  }
}
