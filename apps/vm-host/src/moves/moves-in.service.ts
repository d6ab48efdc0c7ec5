import { Injectable, Logger, OnModuleDestroy, Optional } from '@nestjs/common';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Clock, CopyGrant } from '@app/daemon';
import {
  AgentRestoreRequest,
  DesiredVmState,
  IncomingMove,
  IncomingMoveRequest,
  VmRecord,
  toRfc3339,
} from '@app/fleet-domain';
import { VmHostConfig } from '../config/vm-host.config';
import { HostFactsService } from '../host-facts/host-facts.service';
import { VmAdmissionService } from '../vms/admission/vm-admission.service';
import { diskNode } from '../vms/copies/qmp-copy';
import { VmFiles } from '../vms/files/vm-files';
import { VmSidecar } from '../vms/files/vm-sidecar';
import { VmSidecars } from '../vms/files/vm-sidecars';
import { VmLifeCycles } from '../vms/life-cycle/vm-life-cycles';
import { specOf } from '../vms/life-cycle/vm-record';
import { MeshPorts } from '../vms/ports/mesh-ports';
import { SOCKET_PORT_PROBE } from '../vms/ports/port-probe';
import { COPY_QMP_SOCKET, KVM_CPU_MODELS, KvmCpuModel } from '../vms/qemu/qemu-command-line';
import { QemuDriver } from '../vms/qemu/qemu.driver';
import { withQmp } from '../vms/qemu/qmp.client';
import { runTool } from '../vms/qemu/run-tool';
import { VmDriver } from '../vms/vm-driver';
import { messageOf } from '../vms/vms.errors';
import { MOVE_EXPORT, awaitIncoming, incomingCompleted, takeOver } from './move-qmp';
import { address, hostCpu, lastLines, listening, movedInHere, pauseThen } from './move-helpers';
import { MovePortBridge } from './move-port-bridge';
import {
  IncomingMoveGoneError,
  MoveConflictError,
  MoveFailedError,
  MoveRefusedError,
} from './moves.errors';

/** How long a move to this node may wait for its source's next step before it is given up. */
export const INCOMING_MOVE_TIMEOUT_MS = 30 * 60_000;
/** How long the target waits, once told the migration completed, for its QEMU to agree. */
const TAKE_OVER_WITHIN_MS = 10_000;
const QMP_TIMEOUT_MS = 10_000;
/** How long the answer of an adopted move is kept for its source asking `done` again. */
const FINISHED_KEPT_MS = 10 * 60_000;
/** How long qemu-nbd may take to listen. */
const NBD_LISTEN_WITHIN_MS = 10_000;

type Finish = 'done' | 'abort';

/** One move to this node under way: where it waits, and how its source ends it. */
interface Incoming {
  finish: (how: Finish) => void;
  /** Settles once the VM is adopted here (or rolled back, nothing of it left). */
  outcome: Promise<VmRecord>;
}

/**
 * The node a VM moves to: its room made as a restore's is (VmAdmissionService.restore: RAM,
 * vCPUs, disk room, its ports on the same host ports where free here, its sidecar written first
 * as the intent), then its blank disk filled over NBD by the VM's old node: by QEMU's mirror into
 * a QEMU waiting for the VM's migration (live), or by qemu-img into qemu-nbd (cold). The old node
 * says when it is done (the VM is then adopted: running, or started or left stopped as it was
 * wanted) or that it gave up (all of it rolled back).
 */
@Injectable()
export class MovesInService implements OnModuleDestroy {
  private readonly logger = new Logger('Moves');
  private readonly incoming = new Map<string, Incoming>();
  /** The moves adopted here lately, for a `done` asked again. */
  private readonly finished = new Map<string, { vm: VmRecord; atMs: number }>();

  constructor(
    private readonly config: VmHostConfig,
    private readonly admission: VmAdmissionService,
    private readonly driver: VmDriver,
    private readonly files: VmFiles,
    private readonly hostFacts: HostFactsService,
    private readonly clock: Clock,
    private readonly sidecars: VmSidecars,
    private readonly lifecycle: VmLifeCycles,
    /** Where the mesh forwarded the ports of a VM moving in (absent in a unit test: nowhere). */
    @Optional() private readonly meshPorts?: MeshPorts,
  ) {}

  onModuleDestroy(): void {
    for (const move of this.incoming.values()) move.finish('abort');
  }

  /** Makes room for the VM and answers where its disk (and its migration) are awaited. */
  async receive(
    vmId: string,
    grant: CopyGrant,
    request: IncomingMoveRequest,
  ): Promise<IncomingMove> {
    if (this.incoming.has(vmId)) {
      throw new MoveConflictError(`vm ${vmId} is being moved to this node already`);
    }
    if (!(this.driver instanceof QemuDriver)) {
      throw new MoveRefusedError('this node runs no QEMU (VM_DRIVER): it takes no moved VM');
    }
    const driver = this.driver;
    const cpuModel =
      request.mode === 'live' ? await this.checkPin(grant.source, request) : undefined;
    let ready!: (where: IncomingMove) => void;
    const readyAt = new Promise<IncomingMove>((resolve) => (ready = resolve));
    let finish!: (how: Finish) => void;
    const finished = new Promise<Finish>((resolve) => (finish = resolve));
    const timer = setTimeout(() => finish('abort'), INCOMING_MOVE_TIMEOUT_MS);
    timer.unref();
    const from = `a ${request.mode} move from node ${grant.source}`;
    const restore: AgentRestoreRequest = {
      vm_id: vmId,
      vm_type: request.vm_type,
      ram_mb: request.ram_mb,
      vcpu_count: request.vcpu_count,
      tenant_id: request.tenant_id,
      ports: request.ports,
      keep_host_ports: true,
      ...(request.disk_gb === undefined ? {} : { disk_gb: request.disk_gb }),
      ...(request.copies === undefined ? {} : { copies: request.copies }),
      // Read by no admission step: a move reads no copy.
      source: { vm_id: vmId },
    };
    const outcome = this.admission
      .restore(restore, {
        from,
        make: async (partial) => {
          await runTool('qemu-img', [
            'create',
            '-q',
            '-f',
            'qcow2',
            partial,
            String(request.disk_bytes),
          ]);
          if (request.mode === 'cold') await this.receiveCold(vmId, partial, ready, finished);
        },
        adopt: (sidecar) =>
          request.mode === 'live'
            ? this.adoptLive(driver, sidecar, request, cpuModel, ready, finished)
            : Promise.resolve(this.adoptCold(sidecar, request)),
      })
      .then(({ vm }) => {
        this.remember(vmId, vm);
        return vm;
      })
      .finally(() => {
        clearTimeout(timer);
        this.incoming.delete(vmId);
      });
    this.incoming.set(vmId, { finish, outcome });
    // The caller hears of a refusal (a full node, its id here already) as of a failure before
    // the VM is awaited; a failure after is told to the source's next step.
    outcome.catch(() => undefined);
    return Promise.race([
      readyAt,
      outcome.then(() => {
        throw new MoveFailedError(`vm ${vmId}: the move ended before its disk was awaited`);
      }),
    ]);
  }

  /** Throws IncomingMoveGoneError (404) unless a move of the VM to this node is under way. */
  awaiting(vmId: string): void {
    if (!this.incoming.has(vmId)) throw new IncomingMoveGoneError(vmId);
  }

  /**
   * The source is done: the VM adopted here, as its answer. Asked again (its answer lost on the
   * way), the same answer, for a while: the source must not resume a guest that runs here.
   */
  async done(vmId: string): Promise<VmRecord> {
    const move = this.incoming.get(vmId);
    if (!move) {
      const finished = this.finished.get(vmId);
      if (finished && performance.now() - finished.atMs < FINISHED_KEPT_MS) return finished.vm;
      const here = await movedInHere(this.sidecars, this.lifecycle, this.driver, vmId);
      if (here) return here;
      throw new IncomingMoveGoneError(vmId);
    }
    move.finish('done');
    try {
      return await move.outcome;
    } catch (error) {
      throw new MoveFailedError(
        `vm ${vmId}: node ${this.config.nodeId} could not take it over: ${messageOf(error)}`,
      );
    }
  }

  private remember(vmId: string, vm: VmRecord): void {
    const now = performance.now();
    for (const [id, { atMs }] of this.finished) {
      if (now - atMs >= FINISHED_KEPT_MS) this.finished.delete(id);
    }
    this.finished.set(vmId, { vm, atMs: now });
  }

  /**
   * The source (or the controller, its source gone silent) gave up: everything of the VM here
   * rolled back; unless its QEMU had received the whole guest, which is then this node's (its
   * source never resumes it): taken over, and refused (409) so the caller knows it runs here.
   */
  async abort(vmId: string): Promise<void> {
    const move = this.incoming.get(vmId);
    if (move) move.finish('abort');
    const adopted = move
      ? await move.outcome.catch(() => undefined)
      : await movedInHere(this.sidecars, this.lifecycle, this.driver, vmId);
    if (adopted) {
      throw new MoveConflictError(
        `vm ${vmId}: its whole guest was received here, it runs on node ${this.config.nodeId}: not given up`,
      );
    }
  }

  /**
   * The machine type, accelerator and CPU model the VM runs with on its node: this node runs
   * them all (a guest migrated onto another machine or CPU may crash, or not start), else a
   * refusal naming what differs. The CPU model to start QEMU with under KVM.
   */
  private async checkPin(
    source: string,
    request: IncomingMoveRequest,
  ): Promise<KvmCpuModel | undefined> {
    const same = 'a live move needs the same on both nodes; stop the VM to move it cold';
    const machines = await runTool('qemu-system-x86_64', ['-machine', 'help'], 10_000);
    const known = machines.split('\n').some((line) => line.split(/\s+/)[0] === request.machine);
    if (!known) {
      throw new MoveRefusedError(
        `machine: this node's QEMU has no machine type ${request.machine} (the VM runs on it on node ${source}); ${same}`,
      );
    }
    if (request.accel === 'tcg') {
      if (this.config.accel === 'kvm') {
        throw new MoveRefusedError(
          `accel: the VM runs under TCG on node ${source} and this node runs KVM only (VM_ACCEL=kvm); ${same}`,
        );
      }
      if (request.cpu !== 'qemu64') {
        throw new MoveRefusedError(
          `cpu: the VM runs with CPU model ${request.cpu}; this node runs qemu64 under TCG; ${same}`,
        );
      }
      return undefined;
    }
    if (this.config.accel === 'tcg' || !(await this.hostFacts.kvmUsable())) {
      throw new MoveRefusedError(
        `accel: the VM runs under KVM on node ${source} and this node cannot use KVM; ${same}`,
      );
    }
    const model = KVM_CPU_MODELS.find((candidate) => candidate === request.cpu);
    if (!model) {
      throw new MoveRefusedError(
        `cpu: CPU model ${request.cpu} is not one this node starts; ${same}`,
      );
    }
    if (model.startsWith('host')) {
      const here = await hostCpu();
      if (request.host_cpu === undefined || here !== request.host_cpu) {
        throw new MoveRefusedError(
          `cpu: the VM runs with the host's CPU model on node ${source} (${request.host_cpu ?? 'not said'}), and this node's CPU is ${here ?? 'unknown'}; ${same}`,
        );
      }
    }
    return model;
  }

  /**
   * Live: QEMU started on the blank disk with the source's machine, waiting paused for the
   * migration, the disk exported over NBD for the mirror; once the source says the migration
   * completed, the guest runs here. Whatever fails, QEMU is stopped before the roll-back.
   */
  private async adoptLive(
    driver: QemuDriver,
    sidecar: VmSidecar,
    request: IncomingMoveRequest,
    cpuModel: KvmCpuModel | undefined,
    ready: (where: IncomingMove) => void,
    finished: Promise<Finish>,
  ): Promise<'running'> {
    const vmId = sidecar.vm_id;
    // Opened first: the port the mesh let go of at admission is forwarded again at once.
    const ports = await MovePortBridge.open(
      this.config,
      this.meshPorts,
      vmId,
      sidecar.forwards ?? [],
      this.logger,
    );
    const started = await driver
      .startIncoming(specOf(sidecar), {
        machine: request.machine,
        accel: request.accel,
        ...(cpuModel === undefined ? {} : { cpuModel }),
      })
      .catch(async (error: unknown) => {
        await ports.close();
        throw error;
      });
    const socket = join(this.files.runDir(vmId), COPY_QMP_SOCKET);
    try {
      const host = this.config.wgIp;
      const nbdPort = await SOCKET_PORT_PROBE.anyFree(host, 'tcp');
      const migratePort = await SOCKET_PORT_PROBE.anyFree(host, 'tcp');
      await withQmp(socket, QMP_TIMEOUT_MS, async (qmp) => {
        const disk = await diskNode(qmp, this.files.disk(vmId));
        await awaitIncoming(qmp, disk.node, host, nbdPort, migratePort);
      });
      ready({ nbd_address: address(host, nbdPort), migrate_address: address(host, migratePort) });
      if ((await finished) === 'abort') {
        const whole = await withQmp(socket, QMP_TIMEOUT_MS, incomingCompleted).catch(() => false);
        if (!whole) throw new Error('its old node gave the move up');
        this.logger.warn(`vm ${vmId}: the move given up, but the whole guest is here: taken over`);
      }
      await withQmp(socket, QMP_TIMEOUT_MS, (qmp) => takeOver(qmp, TAKE_OVER_WITHIN_MS));
    } catch (error) {
      await ports.close();
      await driver.stop(vmId, started.record).catch((stopError: unknown) => {
        this.logger.error(`vm ${vmId}: its incoming QEMU not stopped: ${messageOf(stopError)}`);
      });
      throw error;
    }
    // The guest runs here: its TCP ports are its QEMU's now (a failure is logged, never thrown).
    await withQmp(socket, QMP_TIMEOUT_MS, (qmp) => ports.handOver(qmp)).catch((error: Error) =>
      this.logger.error(`vm ${vmId}: its TCP ports not handed to QEMU: ${error.message}`),
    );
    await ports.close();
    sidecar.driver = started.record;
    sidecar.host_ports = started.hostPorts;
    sidecar.started_at = toRfc3339(this.clock.now());
    sidecar.error = null;
    this.logger.log(`vm ${vmId}: moved in live, running here: ${started.summary}`);
    return 'running';
  }

  /** Cold: started as a restore is when it should run, else left stopped as it was. */
  private adoptCold(sidecar: VmSidecar, request: IncomingMoveRequest): 'start' | 'stopped' {
    if (request.desired_state === DesiredVmState.Running) return 'start';
    sidecar.desired_state = DesiredVmState.Stopped;
    // It ran before, on its old node: listed Stopped, not as a create cut short.
    sidecar.started_at = toRfc3339(this.clock.now());
    return 'stopped';
  }

  /**
   * Cold: the blank disk served by qemu-nbd (one client, then it ends) until the source says
   * it is done writing it, or gives up.
   */
  private async receiveCold(
    vmId: string,
    partial: string,
    ready: (where: IncomingMove) => void,
    finished: Promise<Finish>,
  ): Promise<void> {
    const host = this.config.wgIp;
    const port = await SOCKET_PORT_PROBE.anyFree(host, 'tcp');
    const nbd = spawn(
      'qemu-nbd',
      [
        '--format=qcow2',
        `--bind=${host}`,
        `--port=${port}`,
        `--export-name=${MOVE_EXPORT}`,
        '--shared=1',
        '--persistent',
        partial,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    nbd.stderr
      ?.setEncoding('utf8')
      .on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-2000)));
    const exited = new Promise<number | null>((resolve) =>
      nbd.on('close', (code) => resolve(code)),
    );
    try {
      await listening(host, port, nbd, NBD_LISTEN_WITHIN_MS);
      ready({ nbd_address: address(host, port) });
      const how = await Promise.race([finished, exited.then(() => 'exited' as const)]);
      if (how === 'abort') throw new Error('its old node gave the move up');
      if (how === 'exited') throw new Error(`qemu-nbd ended: ${lastLines(stderr)}`);
      // Ended on SIGTERM, qemu-nbd flushes and closes the disk first.
      nbd.kill('SIGTERM');
      const code = await Promise.race([exited, pauseThen(10_000, 'still running' as const)]);
      if (code !== 0) throw new Error(`qemu-nbd ended ${String(code)}: ${lastLines(stderr)}`);
    } finally {
      if (nbd.exitCode === null && nbd.signalCode === null) nbd.kill('SIGKILL');
    }
    this.logger.log(`vm ${vmId}: its disk received (cold move)`);
  }
}
