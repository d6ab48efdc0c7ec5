import { Injectable, Logger, Optional } from '@nestjs/common';
import { join } from 'node:path';
import { validateInput } from '@app/daemon';
import {
  AgentRestoreRequest,
  AgentRestoredVm,
  MAX_BACKUPS_LISTED,
  RestorePoint,
  RestorePoints,
  RestoreSpec,
  GIB,
  SSH_GUEST_PORT,
  rfc3339ToEpochNanos,
} from '@app/fleet-domain';
import { VmHostConfig } from '../../config/vm-host.config';
import { VmAdmissionService } from '../admission/vm-admission.service';
import { BackupFolder, Chain, fileDigest } from './backup-folder';
import { VmCopier } from './vm-copier';
import { ReplicaGrantFloors } from './replica-grant-floors';
import { ReplicaPuller } from './replica-pull';
import { checkRestoredSize, restoredAtMs } from './restored-disk-size';
import { VmDiskRoom } from '../admission/vm-disk-room';
import { RestoreSourceError } from './vm-restores.errors';
import { messageOf } from '../vms.errors';

/** A point found on disk: what the answer shows, and the chain file it is. */
interface FoundPoint {
  point: RestorePoint;
  chain: Chain;
  index: number;
}

/**
 * Restores on this node: the points it holds for a VM (the replica a peer sent it, kept under
 * VM_DISK_DIR/replicas/<vm_id>/, and the backups in VM_BACKUP_DIR/<vm_id>/, whichever node made
 * them), and a VM made from one of them through admission (VmAdmissionService.restore). Both
 * folders hold chains in the same format (backup-folder.ts), read the same way.
 */
@Injectable()
export class VmRestoresService {
  private readonly logger = new Logger('Restores');
  private readonly replicas: BackupFolder;
  private readonly backups?: BackupFolder;
  private readonly floors: ReplicaGrantFloors;

  constructor(
    config: VmHostConfig,
    private readonly admission: VmAdmissionService,
    private readonly copier: VmCopier,
    /** Absent (a unit test's service): no pull from another node. */
    @Optional() private readonly puller?: ReplicaPuller,
    /** The node's one (VmsModule's); a unit test's service makes its own. */
    @Optional() floors?: ReplicaGrantFloors,
    /** Absent (a unit test's service): a restore without disk_gb is not judged by size. */
    @Optional() private readonly diskRoom?: VmDiskRoom,
  ) {
    this.floors = floors ?? new ReplicaGrantFloors(config);
    this.replicas = new BackupFolder(join(config.diskDir, 'replicas'));
    if (config.backupDir) this.backups = new BackupFolder(config.backupDir);
  }

  /** Every point this node holds for `vmId`, newest first, and the VM as its newest chain says. */
  async points(vmId: string): Promise<RestorePoints> {
    const found = [
      ...(await this.found(this.replicas, 'replica', vmId)),
      ...(this.backups ? await this.found(this.backups, 'backup', vmId) : []),
    ].sort((a, b) => compareNewestFirst(a.point, b.point));
    const newest = found[0];
    return {
      vm_id: vmId,
      points: found.slice(0, MAX_BACKUPS_LISTED).map(({ point }) => point),
      spec: newest ? await specOf(newest.chain) : null,
    };
  }

  /** The VM made from the point the request names, started; see VmAdmissionService.restore. */
  async restore(request: AgentRestoreRequest): Promise<AgentRestoredVm> {
    if (request.source.pull) return this.restorePulled(request);
    const chosen = await this.choose(request);
    const { chain, index, point } = chosen;
    const from = `${point.source} ${point.backup_id} of vm ${chain.manifest.vm_id} (taken ${point.taken_at})`;
    const outcome = await this.admission.restore(request, {
      from,
      make: async (target) => {
        await this.checkFiles(chain, index);
        await this.copier.convert(join(chain.dir, chain.manifest.files[index].file), target);
        await checkRestoredSize(this.copier, target, await this.limitBytes(request), from);
      },
    });
    // Restored (moved, not as a new VM) from this copy: a copy grant issued before now writes
    // nothing more over it.
    if (point.source === 'replica' && request.vm_id === chain.manifest.vm_id) {
      await this.floors.restored(chain.manifest.vm_id, restoredAtMs(request));
    }
    return { vm: outcome.vm, point };
  }

  /**
   * From a copy another node holds (source.pull): pulled into a private staging folder and
   * checked (ReplicaPuller) once admitted, converted into the VM's disk, the staging removed.
   */
  private async restorePulled(request: AgentRestoreRequest): Promise<AgentRestoredVm> {
    const { pull, replica, backup_id: backupId } = request.source;
    const sourceVm = request.source.vm_id ?? request.vm_id;
    const [ssh] = request.ports;
    if (ssh?.guest_port !== SSH_GUEST_PORT || ssh.protocol !== 'tcp') {
      throw new RestoreSourceError('ports: the first must be SSH (guest_port 22, tcp)', 400);
    }
    if (replica !== true || backupId !== undefined || !pull) {
      throw new RestoreSourceError('source.pull: goes with replica (true) and no backup_id', 400);
    }
    if (!this.puller) throw new RestoreSourceError('source.pull: not taken by this node');
    const puller = this.puller;
    let point: RestorePoint | undefined;
    const outcome = await this.admission.restore(request, {
      from: `replica ${pull.backup_id} of vm ${sourceVm} on node ${pull.node_id}`,
      make: async (target) => {
        const pulled = await puller.pull(sourceVm, pull);
        try {
          await this.copier.convert(pulled.top, target);
          await checkRestoredSize(
            this.copier,
            target,
            await this.limitBytes(request),
            `vm ${sourceVm}'s copy on node ${pull.node_id}`,
          );
          point = pulled.point;
        } finally {
          await puller.remove(pulled.dir);
        }
      },
    });
    return { vm: outcome.vm, point: point! };
  }

  /** The most a restored disk may be: the request's disk_gb, else the base image's size. */
  private async limitBytes(request: AgentRestoreRequest): Promise<number | undefined> {
    if (request.disk_gb !== undefined && request.disk_gb !== null) return request.disk_gb * GIB;
    return this.diskRoom?.imageBytes();
  }

  private async choose(request: AgentRestoreRequest): Promise<FoundPoint> {
    const { replica, backup_id: backupId, at } = request.source;
    const sourceVm = request.source.vm_id ?? request.vm_id;
    const [ssh] = request.ports;
    // Every VM's forwards begin with SSH (checked here: a top-level list is validated item by item).
    if (ssh?.guest_port !== SSH_GUEST_PORT || ssh.protocol !== 'tcp') {
      throw new RestoreSourceError('ports: the first must be SSH (guest_port 22, tcp)', 400);
    }
    if ((replica === true) === (backupId !== undefined)) {
      throw new RestoreSourceError('source: give exactly one of replica (true) and backup_id', 400);
    }
    const atNs = at === undefined ? undefined : rfc3339ToEpochNanos(at);
    let found: FoundPoint[];
    if (replica) {
      found = await this.found(this.replicas, 'replica', sourceVm);
      if (found.length === 0) {
        throw new RestoreSourceError(`source.replica: this node holds no copy of vm ${sourceVm}`);
      }
    } else {
      if (!this.backups) {
        throw new RestoreSourceError(
          'source.backup_id: backups are off on this node (VM_BACKUP_DIR is not set)',
        );
      }
      const [chainId, index] = backupId!.split('/');
      found = (await this.found(this.backups, 'backup', sourceVm)).filter(
        ({ chain, point }) =>
          chain.id === chainId && (index === undefined || point.backup_id === backupId),
      );
      if (found.length === 0) {
        throw new RestoreSourceError(
          `source.backup_id: no backup ${backupId} of vm ${sourceVm} in this node's VM_BACKUP_DIR`,
        );
      }
    }
    const inTime = found
      .filter(({ point }) => atNs == null || (rfc3339ToEpochNanos(point.taken_at) ?? 0n) <= atNs)
      .sort((a, b) => compareNewestFirst(a.point, b.point));
    if (inTime.length === 0) {
      throw new RestoreSourceError(
        `source.at: no ${replica ? 'copy' : 'backup'} of vm ${sourceVm} here was taken at or before ${at}`,
      );
    }
    return inTime[0];
  }

  /**
   * Every file of the chain up to `index` is there with the size and sha256 its manifest
   * wrote: a copy damaged (or cut) on its way between disks is refused, not booted.
   */
  private async checkFiles(chain: Chain, index: number): Promise<void> {
    const files = chain.manifest.files.slice(0, index + 1);
    for (const [at, file] of files.entries()) {
      const digest = await fileDigest(join(chain.dir, file.file)).catch(() => undefined);
      if (!digest || digest.size !== file.size_bytes || digest.sha256 !== file.sha256) {
        throw new RestoreSourceError(
          `the chain ${chain.id} of vm ${chain.manifest.vm_id}: its file ${file.file} is ${digest ? 'not what its manifest says (size or sha256)' : 'missing or unreadable'}; restore from another point`,
        );
      }
      // A chain from another node (a peer's copy, a backup folder carried over) is the
      // sender's: each file's header may name nothing but the chain's previous file.
      const backing = at === 0 ? null : files[at - 1].file;
      await this.copier.check(join(chain.dir, file.file), backing).catch((error: unknown) => {
        throw new RestoreSourceError(
          `the chain ${chain.id} of vm ${chain.manifest.vm_id}: its file ${file.file} is not a file of this chain (${messageOf(error).slice(0, 200)}); restore from another point`,
        );
      });
    }
  }

  private async found(
    folder: BackupFolder,
    source: RestorePoint['source'],
    vmId: string,
  ): Promise<FoundPoint[]> {
    const { chains } = await folder.chains(vmId).catch((error: unknown) => {
      this.logger.warn(`vm ${vmId}: ${source} chains not read: ${String(error)}`);
      return { chains: [] as Chain[] };
    });
    return chains.flatMap((chain) =>
      chain.manifest.files.map((file, index) => ({
        chain,
        index,
        point: {
          source,
          backup_id: `${chain.id}/${String(index).padStart(4, '0')}`,
          kind: file.kind,
          taken_at: file.taken_at,
          size_bytes: file.size_bytes,
        },
      })),
    );
  }
}

function compareNewestFirst(a: RestorePoint, b: RestorePoint): number {
  const at = rfc3339ToEpochNanos(a.taken_at) ?? 0n;
  const bt = rfc3339ToEpochNanos(b.taken_at) ?? 0n;
  if (at !== bt) return at > bt ? -1 : 1;
  // A replica first at the same instant: it is on VM_DISK_DIR, usually the faster disk.
  return a.source === b.source ? 0 : a.source === 'replica' ? -1 : 1;
}

/** The VM as the chain's manifest keeps it (its sidecar then), when that reads as a VM. */
async function specOf(chain: Chain): Promise<RestoreSpec | null> {
  const vm = chain.manifest.vm ?? {};
  const forwards = Array.isArray(vm.forwards) ? vm.forwards : vm.host_ports;
  const { instance } = await validateInput(
    RestoreSpec,
    {
      vm_type: vm.vm_type,
      ram_mb: vm.ram_alloc_mb,
      vcpu_count: vm.vcpu_count,
      tenant_id: vm.tenant_id ?? null,
      ports: Array.isArray(forwards) ? forwards : [],
      ...(vm.disk_gb === undefined ? {} : { disk_gb: vm.disk_gb }),
    },
    'body',
  );
  return instance ?? null;
}
