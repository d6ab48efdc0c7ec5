import { Injectable, Logger } from '@nestjs/common';
import { Subject } from 'rxjs';
import { Clock } from '@app/daemon';
import { CreateVmRequest, VmRecord, VmState, toRfc3339 } from '@app/fleet-domain';
import { VmHostConfig } from '../config/vm-host.config';
import { NodeVmsSource } from '../heartbeat/node-vms.source';
import { HostFactsService } from '../heartbeat/host-facts.service';
import { QemuDriver } from './qemu.driver';
import { VmFiles, VmSidecar } from './vm-files';
import { VmNotOnNodeError } from './vms.errors';

const SSH_GUEST_PORT = 22;

/**
 * This node's VMs: starts them (answering at once, provisioning after), reports them in every
 * heartbeat, destroys them. State is rebuilt from the sidecars and QMP each time it is asked,
 * so it survives an agent restart.
 */
@Injectable()
export class VmsService extends NodeVmsSource {
  private readonly logger = new Logger('Vms');
  private readonly changed = new Subject<void>();
  readonly changes = this.changed.asObservable();
  /** Provisioning under way in this process, by vm_id. */
  private readonly provisioning = new Map<string, Promise<void>>();

  constructor(
    private readonly config: VmHostConfig,
    private readonly files: VmFiles,
    private readonly qemu: QemuDriver,
    private readonly hostFacts: HostFactsService,
    private readonly clock: Clock,
  ) {
    super();
  }

  /** Accepts the VM (state Provisioning) and does the slow work after answering. */
  async spawn(request: CreateVmRequest): Promise<VmRecord> {
    const baseImage = await this.qemu.baseImage();
    const accel = request.prefer_kvm && (await this.hostFacts.kvmUsable()) ? 'kvm' : 'tcg';
    const vmId = await this.files.newVmId();
    const sidecar: VmSidecar = {
      vm_id: vmId,
      vm_type: request.vm_type,
      tenant_id: request.tenant_id ?? null,
      ram_alloc_mb: request.ram_mb,
      vcpu_count: request.vcpu_count,
      host_ports: [],
      accel,
      created_at: toRfc3339(this.clock.now()),
      started_at: null,
      pid: null,
      error: null,
    };
    await this.files.writeSidecar(sidecar);
    this.logger.log(
      `vm ${vmId} accepted: ${request.vm_type}, ${request.ram_mb} MB, ${request.vcpu_count} vCPU, ${accel}${sidecar.tenant_id ? `, tenant ${sidecar.tenant_id}` : ''}`,
    );
    const task = this.provision(sidecar, baseImage).finally(() => {
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
    if (sidecar.pid !== null) await this.qemu.stop(vmId, sidecar.pid);
    await this.files.removeRuntime(vmId);
    this.logger.log(`vm ${vmId} destroyed (disk ${this.files.disk(vmId)} kept)`);
    this.changed.next();
  }

  private async provision(sidecar: VmSidecar, baseImage: string): Promise<void> {
    const vmId = sidecar.vm_id;
    let step = 'disk';
    try {
      const disk = await this.qemu.createDisk(vmId, baseImage);
      step = 'seed ISO';
      const seedIso = await this.qemu.createSeedIso(vmId, sidecar.vm_type);
      step = 'QEMU';
      const sshPort = await this.qemu.freeHostPort();
      sidecar.host_ports = [{ host_port: sshPort, guest_port: SSH_GUEST_PORT, protocol: 'tcp' }];
      sidecar.pid = await this.qemu.launch({
        vmId,
        ramMb: sidecar.ram_alloc_mb,
        vcpuCount: sidecar.vcpu_count,
        accel: sidecar.accel,
        disk,
        seedIso,
        qmpSocket: this.files.qmpSocket(vmId),
        pidFile: this.files.pidFile(vmId),
        serialLog: this.files.serialLog(vmId),
        sshHost: this.config.wgIp,
        sshPort,
      });
      sidecar.started_at = toRfc3339(this.clock.now());
      await this.files.writeSidecar(sidecar);
      this.logger.log(
        `vm ${vmId} started: QEMU pid ${sidecar.pid}, ${sidecar.accel}, ssh on ${this.config.wgIp}:${sshPort}`,
      );
    } catch (error) {
      sidecar.error = `${step}: ${error instanceof Error ? error.message : String(error)}`;
      sidecar.host_ports = [];
      this.logger.error(`vm ${vmId} failed at the ${sidecar.error}`);
      await this.files.writeSidecar(sidecar).catch(() => undefined);
    }
  }

  private async stateOf(sidecar: VmSidecar): Promise<VmState> {
    if (this.provisioning.has(sidecar.vm_id)) return VmState.Provisioning;
    if (sidecar.error !== null) return VmState.Error;
    // No pid and no provisioning here: an agent was stopped mid-provisioning.
    if (sidecar.pid === null) return VmState.Error;
    if (!(await this.qemu.isAlive(sidecar.pid, sidecar.vm_id))) return VmState.Stopped;
    try {
      return (await this.qemu.status(sidecar.vm_id)).running ? VmState.Running : VmState.Stopped;
    } catch {
      // Alive but QMP not answering (yet): not known to run.
      return VmState.Provisioning;
    }
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
