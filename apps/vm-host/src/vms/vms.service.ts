import { Injectable, Logger } from '@nestjs/common';
import { Subject } from 'rxjs';
import { Clock } from '@app/daemon';
import { CreateVmRequest, VmRecord, VmState, toRfc3339 } from '@app/fleet-domain';
import { VmHostConfigError } from '../config/vm-host.config';
import { NodeVmsSource } from '../heartbeat/node-vms.source';
import { HostMetrics } from '../metrics/host-metrics.service';
import { VmDriver, VmRunState, VmSpec } from './vm-driver';
import { VmFiles, VmSidecar } from './vm-files';
import { VmCreateError, VmNotOnNodeError } from './vms.errors';

const RUN_STATES: Record<VmRunState, VmState> = {
  running: VmState.Running,
  stopped: VmState.Stopped,
  // Alive but not answering (yet): not known to run.
  unknown: VmState.Provisioning,
};

/**
 * This node's VMs: starts them (answering at once, provisioning after), reports them in every
 * heartbeat, destroys them. State is rebuilt from the sidecars and the driver each time it is
 * asked, so it survives an agent restart.
 */
@Injectable()
export class VmsService extends NodeVmsSource {
  private readonly logger = new Logger('Vms');
  private readonly changed = new Subject<void>();
  readonly changes = this.changed.asObservable();
  /** Provisioning under way in this process, by vm_id. */
  private readonly provisioning = new Map<string, Promise<void>>();

  constructor(
    private readonly files: VmFiles,
    private readonly driver: VmDriver,
    private readonly clock: Clock,
    private readonly metrics: HostMetrics = new HostMetrics(),
  ) {
    super();
  }

  /**
   * Readies VM_DISK_DIR (created if missing) before the agent listens. Not writable, or unfit
   * for the driver's files, it is a start-up error; missing hypervisor tools only warn.
   */
  async prepare(): Promise<void> {
    try {
      this.driver.checkDiskDir();
      await this.files.prepare();
    } catch (error) {
      throw new VmHostConfigError(
        `VM_DISK_DIR ${this.files.root} is not usable: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    await this.driver.checkTools();
  }

  /** Accepts the VM (state Provisioning) and does the slow work after answering. */
  async spawn(request: CreateVmRequest): Promise<VmRecord> {
    const plan = await this.driver.plan({ preferKvm: request.prefer_kvm });
    const vmId = await this.files.newVmId();
    const sidecar: VmSidecar = {
      vm_id: vmId,
      vm_type: request.vm_type,
      tenant_id: request.tenant_id ?? null,
      ram_alloc_mb: request.ram_mb,
      vcpu_count: request.vcpu_count,
      host_ports: [],
      created_at: toRfc3339(this.clock.now()),
      started_at: null,
      error: null,
      driver: plan.record,
    };
    await this.files.writeSidecar(sidecar);
    this.logger.log(
      `vm ${vmId} accepted: ${request.vm_type}, ${request.ram_mb} MB, ${request.vcpu_count} vCPU, ${plan.summary}${sidecar.tenant_id ? `, tenant ${sidecar.tenant_id}` : ''}`,
    );
    const task = this.provision(sidecar).finally(() => {
      this.provisioning.delete(vmId);
      this.changed.next();
    });
    this.provisioning.set(vmId, task);
    this.changed.next();
    return toVmRecord(sidecar, VmState.Provisioning);
  }

  async list(): Promise<VmRecord[]> {
    const vms: VmRecord[] = [];
    for (const vmId of await this.files.listVmIds()) {
      const sidecar = await this.files.readSidecar(vmId);
      if (sidecar) vms.push(toVmRecord(sidecar, await this.stateOf(sidecar)));
    }
    return vms;
  }

  /** Throws VmNotOnNodeError for a VM this node does not have, so a second call is a 404. */
  async destroy(vmId: string): Promise<void> {
    const pending = this.provisioning.get(vmId);
    if (pending) await pending;
    const sidecar = await this.files.readSidecar(vmId);
    if (!sidecar) throw new VmNotOnNodeError(vmId);
    await this.driver.stop(vmId, sidecar.driver);
    await this.files.removeRuntime(vmId);
    this.logger.log(`vm ${vmId} destroyed (disk ${this.files.disk(vmId)} kept)`);
    this.changed.next();
  }

  private async provision(sidecar: VmSidecar): Promise<void> {
    const vmId = sidecar.vm_id;
    const spec: VmSpec = {
      vmId,
      vmType: sidecar.vm_type,
      ramMb: sidecar.ram_alloc_mb,
      vcpuCount: sidecar.vcpu_count,
    };
    let step = 'create';
    try {
      const started = await this.metrics.timeSpawn(this.driver.create(spec, sidecar.driver));
      // Kept even if the write below fails, so a delete still stops what was started.
      sidecar.driver = started.record;
      sidecar.host_ports = started.hostPorts;
      sidecar.started_at = toRfc3339(this.clock.now());
      step = 'sidecar';
      await this.files.writeSidecar(sidecar);
      this.logger.log(`vm ${vmId} started: ${started.summary}`);
    } catch (error) {
      if (error instanceof VmCreateError) step = error.step;
      sidecar.error = `${step}: ${error instanceof Error ? error.message : String(error)}`;
      sidecar.host_ports = [];
      this.logger.error(`vm ${vmId} failed at the ${sidecar.error}`);
      await this.files.writeSidecar(sidecar).catch(() => undefined);
    }
  }

  private async stateOf(sidecar: VmSidecar): Promise<VmState> {
    if (this.provisioning.has(sidecar.vm_id)) return VmState.Provisioning;
    if (sidecar.error !== null) return VmState.Error;
    // Never started and no provisioning here: an agent was stopped mid-provisioning.
    if (sidecar.started_at === null) return VmState.Error;
    return RUN_STATES[await this.driver.inspect(sidecar.vm_id, sidecar.driver)];
  }
}

function toVmRecord(sidecar: VmSidecar, state: VmState): VmRecord {
  return {
    vm_id: sidecar.vm_id,
    vm_type: sidecar.vm_type,
    state,
    ram_alloc_mb: sidecar.ram_alloc_mb,
    vcpu_count: sidecar.vcpu_count,
    started_at: sidecar.started_at,
    tenant_id: sidecar.tenant_id,
    host_ports: sidecar.host_ports,
  };
}
