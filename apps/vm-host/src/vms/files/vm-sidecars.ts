import { Injectable, Logger } from '@nestjs/common';
import { DesiredVmState, toRfc3339 } from '@app/fleet-domain';
import { DriverRecord, FoundVm, VmDriver } from '../vm-driver';
import { VmFiles } from './vm-files';
import { VmSidecar } from './vm-sidecar';
import { SidecarUnreadableError } from '../vms.errors';
import { LEAST_RECORD, RECORD_FIELDS, RecordField, wireRefusals } from './sidecar-wire';

/** A record for a VM whose driver data is lost: the driver finds its processes by name alone. */
export const NO_RECORD: DriverRecord = { kind: 'none' };

/** Why a VM's sidecar cannot be listed as it is; with the sidecar when it was read but refused. */
interface Unlisted {
  why: string;
  refused?: { sidecar: VmSidecar; fields: RecordField[] };
}

/**
 * The VMs' sidecars as the services read them: one that cannot be read becomes a stand-in
 * listed as Error (logged once per reason), so the VM is neither dropped nor its files removed.
 * While its process lives, the stand-in has the RAM, vCPUs and ports the process was started
 * with, so the VM stays committed with all it holds. So does one whose values the wire refuses
 * (wireRefusals): its stand-in keeps what is valid, so every heartbeat is taken whatever one
 * sidecar holds.
 */
@Injectable()
export class VmSidecars {
  private readonly logger = new Logger('Vms');
  /** Stand-ins for sidecars that could not be read: never written back, never acted on. */
  private readonly standIns = new WeakSet<VmSidecar>();
  /** Why each VM's sidecar could not be read, as last logged (one line per new reason). */
  private readonly unreadable = new Map<string, string>();

  constructor(
    private readonly files: VmFiles,
    private readonly driver: VmDriver,
  ) {}

  /** Every VM's sidecar (or stand-in), in vm id order; the stand-ins' processes found at once. */
  async all(): Promise<VmSidecar[]> {
    const sidecars: VmSidecar[] = [];
    const unlisted: Array<{ vmId: string; read: Unlisted }> = [];
    for (const vmId of await this.files.listVmIds()) {
      const read = await this.read(vmId);
      if (read && 'why' in read) unlisted.push({ vmId, read });
      else if (read) sidecars.push(read);
    }
    if (unlisted.length === 0) return sidecars;
    const found = await this.driver.find(unlisted.map(({ vmId }) => vmId));
    for (const { vmId, read } of unlisted) {
      sidecars.push(this.standIn(vmId, read, found.get(vmId)));
    }
    return sidecars.sort((a, b) => (a.vm_id < b.vm_id ? -1 : a.vm_id > b.vm_id ? 1 : 0));
  }

  /**
   * The VM's sidecar, undefined when it has none; a stand-in when it cannot be read, sized from
   * `live` (else from what the driver finds running) when the process tells.
   */
  async of(vmId: string, live?: FoundVm): Promise<VmSidecar | undefined> {
    const read = await this.read(vmId);
    if (!read || !('why' in read)) return read;
    return this.standIn(vmId, read, live ?? (await this.driver.find([vmId])).get(vmId));
  }

  /** True for what `of` gave in place of a sidecar it could not read. */
  isStandIn(sidecar: VmSidecar): boolean {
    return this.standIns.has(sidecar);
  }

  /** Forgets the VM once it is deleted, so a new unreadable sidecar of that id is logged. */
  forget(vmId: string): void {
    this.unreadable.delete(vmId);
  }

  /**
   * The sidecar, undefined when there is none, or why it cannot be listed as it is (logged
   * once): it cannot be read, or the wire refuses some of its values.
   */
  private async read(vmId: string): Promise<VmSidecar | undefined | Unlisted> {
    let sidecar: VmSidecar | undefined;
    try {
      sidecar = await this.files.readSidecar(vmId);
    } catch (error) {
      if (!(error instanceof SidecarUnreadableError)) throw error;
      this.logOnce(vmId, error.message);
      return { why: `sidecar unreadable (${error.reason})` };
    }
    const fields = sidecar ? wireRefusals(sidecar) : [];
    if (!sidecar || fields.length === 0) {
      this.unreadable.delete(vmId);
      return sidecar;
    }
    const why = `sidecar holds values the fleet's wire refuses (${fields.join(', ')})`;
    this.logOnce(vmId, `vm ${vmId}: ${why}`);
    return { why, refused: { sidecar, fields } };
  }

  private logOnce(vmId: string, problem: string): void {
    if (this.unreadable.get(vmId) === problem) return;
    this.unreadable.set(vmId, problem);
    this.logger.error(
      `${problem}: kept and listed as Error, its process and files left alone until it is deleted`,
    );
  }

  /**
   * What is listed of a VM whose sidecar cannot be read: its id, state Error, and why; with the
   * RAM, vCPUs and ports of its live process when the driver can tell them. Of a sidecar the
   * wire refuses, its valid fields too, and the reason names the others and what they became.
   */
  private standIn(vmId: string, { why, refused }: Unlisted, live: FoundVm | undefined): VmSidecar {
    const sized = live?.ramMb !== undefined && live.vcpuCount !== undefined;
    const sidecar: VmSidecar = {
      vm_id: vmId,
      // Without the sidecar or a process that tells, the least the wire allows.
      ...LEAST_RECORD,
      ram_alloc_mb: live?.ramMb ?? LEAST_RECORD.ram_alloc_mb,
      vcpu_count: live?.vcpuCount ?? LEAST_RECORD.vcpu_count,
      host_ports: live?.hostPorts ?? LEAST_RECORD.host_ports,
      created_at: toRfc3339(0),
      error: sized
        ? `${why}; its type is not known, its RAM and vCPUs are its running process's`
        : `${why}; its type, RAM and vCPUs are not known`,
      driver: NO_RECORD,
      idempotency_key: null,
      // Never acted on: nothing is started or stopped for a stand-in.
      desired_state: DesiredVmState.Running,
      last_exit: null,
    };
    if (refused) {
      // What the wire takes is kept; the refused fields are as for an unreadable sidecar.
      const kept = RECORD_FIELDS.filter((field) => !refused.fields.includes(field));
      Object.assign(
        sidecar,
        Object.fromEntries(kept.map((field) => [field, refused.sidecar[field]])),
        {
          created_at: refused.sidecar.created_at,
          idempotency_key: refused.sidecar.idempotency_key,
        },
      );
    }
    // A process's command line is no more trusted than a sidecar: the record stays valid.
    for (const field of wireRefusals(sidecar)) {
      Object.assign(sidecar, { [field]: LEAST_RECORD[field] });
    }
    if (refused) {
      const listed = refused.fields.map((field) => JSON.stringify(sidecar[field])).join(', ');
      sidecar.error = `${why}; ${refused.fields.join(', ')} listed as ${listed}`;
    }
    this.standIns.add(sidecar);
    return sidecar;
  }
}
