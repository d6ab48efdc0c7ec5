import { Injectable, Logger } from '@nestjs/common';
import { mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { Clock, CopyGrant } from '@app/daemon';
import {
  HeartbeatReplica,
  ID_PATTERN,
  MAX_REPLICAS_REPORTED,
  MAX_REPLICA_CHAIN_FILES,
  MAX_REPLICA_CHUNK_BYTES,
  ReplicaState,
  ReplicaTransfer,
  StartReplicaTransfer,
} from '@app/fleet-domain';
import { VmHostConfig } from '../config/vm-host.config';
import {
  BackupFolder,
  BackupManifest,
  Chain,
  ChainFile,
  MANIFEST_FORMAT,
  chainFileName,
  fileDigest,
  partialFileName,
} from '../vms/copies/backup-folder';
import { VmDiskRoom } from '../vms/admission/vm-disk-room';
import { VmSidecars } from '../vms/files/vm-sidecars';
import { VmCopier } from '../vms/copies/vm-copier';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../vms/files/vm-files';
import { messageOf } from '../vms/vms.errors';
import { ReplicaGrantFloors } from '../vms/copies/replica-grant-floors';
import { copyRoomBytes } from '../vms/copies/copy-room';
import { ReplicaGrantStaleError } from '../vms/copies/replica-grant-floor';
import {
  ReplicaConflictError,
  ReplicaNoRoomError,
  ReplicaTransferGoneError,
  ReplicaTransferInvalidError,
} from './replicas.errors';
import { TRANSFER_IDLE_MS, Transfer, appendBody } from './replica-transfer';

/**
 * Copies of other nodes' VMs held on this node (replicas), each a chain folder in the backup
 * chain format under `<VM_DISK_DIR>/replicas/<vm_id>/`. A file is received in chunks into a new
 * `.partial` file, checked with qemu-img, and only then renamed and taken into the manifest:
 * a transfer cut midway leaves the last good copy as it was. Callers are the VM's source node,
 * with a copy grant the guard has verified for this VM.
 */
@Injectable()
export class ReplicasService {
  private readonly logger = new Logger('Replicas');
  readonly folder: BackupFolder;
  private readonly transfers = new Map<string, Transfer>();
  readonly floors: ReplicaGrantFloors;

  constructor(
    private readonly config: VmHostConfig,
    private readonly copier: VmCopier,
    private readonly clock: Clock,
    private readonly diskRoom?: VmDiskRoom,
    private readonly sidecars?: VmSidecars,
    /** The node's one (VmsModule's); a unit test's service makes its own. */
    floors?: ReplicaGrantFloors,
  ) {
    this.folder = new BackupFolder(join(config.diskDir, 'replicas'));
    this.floors = floors ?? new ReplicaGrantFloors(config);
    // A restore from the copy here: transfers of the VM in flight carry grants from before it.
    this.floors.onRestored((vmId) => this.abandonVm(vmId, 'the VM was restored meanwhile'));
  }

  /** What this node holds of the VM's copy. */
  async state(vmId: string): Promise<ReplicaState> {
    const chain = await this.current(vmId);
    const files = chain?.manifest.files ?? [];
    const last = files[files.length - 1];
    return {
      vm_id: vmId,
      source_node_id: chain?.manifest.node_id ?? null,
      chain_id: chain?.id ?? null,
      files: files.length,
      last_file: last?.file ?? null,
      copied_at: last?.taken_at ?? null,
      size_bytes: files.reduce((sum, file) => sum + file.size_bytes, 0),
    };
  }

  /**
   * Every copy held here, for the heartbeat: each VM's newest chain, its point in time the
   * last file's taken_at.
   */
  async replicas(): Promise<HeartbeatReplica[]> {
    const entries = await readdir(this.folder.root, { withFileTypes: true }).catch(() => []);
    const held: HeartbeatReplica[] = [];
    for (const entry of entries) {
      if (!entry.isDirectory() || !ID_PATTERN.test(entry.name)) continue;
      const state = await this.state(entry.name).catch(() => undefined);
      if (!state?.source_node_id || !state.copied_at) continue;
      held.push({
        vm_id: state.vm_id,
        source_node_id: state.source_node_id,
        copied_at: state.copied_at,
        size_bytes: state.size_bytes,
      });
      if (held.length >= MAX_REPLICAS_REPORTED) break;
    }
    return held;
  }

  /**
   * Starts receiving one file: a full copy opens a new chain, an incremental adds to the chain
   * held (the same source's, at its next place). Refused before anything is written when it
   * does not fit beside VM_DISK_DIR's reserve. A transfer of the VM already under way is
   * given up: the source starts one only when its last ended.
   */
  async start(
    vmId: string,
    grant: CopyGrant,
    request: StartReplicaTransfer,
  ): Promise<ReplicaTransfer> {
    await this.giveUpIdle();
    await this.floors.check(vmId, grant, request.kind);
    const earlier = [...this.transfers.values()].find((transfer) => transfer.vmId === vmId);
    if (earlier) await this.abandon(earlier, 'a new transfer of the VM began');
    const room = await this.room();
    if (request.size_bytes > room) throw new ReplicaNoRoomError(vmId, request.size_bytes, room);
    await mkdir(this.folder.root, { recursive: true, mode: PRIVATE_DIR_MODE });
    let chainId: string;
    let chainDir: string;
    let index: number;
    if (request.kind === 'full') {
      if (request.chain_id !== undefined || request.index !== undefined) {
        throw new ReplicaTransferInvalidError('a full copy names no chain_id or index');
      }
      ({ id: chainId, dir: chainDir } = await this.folder.newChain(vmId, this.clock.wallNow()));
      index = 0;
    } else {
      const chain = await this.current(vmId);
      const files = chain?.manifest.files.length ?? 0;
      if (
        !chain ||
        chain.id !== request.chain_id ||
        chain.manifest.node_id !== grant.source ||
        request.index !== files ||
        files >= MAX_REPLICA_CHAIN_FILES
      ) {
        throw new ReplicaConflictError(
          `vm ${vmId}'s copy here is ${chain ? `chain ${chain.id} of node ${chain.manifest.node_id} with ${files} file(s)` : 'none'}: an incremental for chain ${request.chain_id ?? '(none)'} at ${request.index ?? '(none)'} does not add to it; send a full copy`,
        );
      }
      for (const leftover of chain.leftovers) await this.folder.remove(join(chain.dir, leftover));
      chainId = chain.id;
      chainDir = chain.dir;
      index = files;
    }
    const partial = join(chainDir, partialFileName(index));
    const handle = await open(partial, 'w', PRIVATE_FILE_MODE);
    await handle.close();
    const transfer: Transfer = {
      id: `${chainId}.${index}`,
      vmId,
      source: grant.source,
      request,
      chainId,
      chainDir,
      newChain: request.kind === 'full',
      partial,
      index,
      received: 0,
      lastMoveMs: this.clock.now(),
      busy: false,
    };
    this.transfers.set(transfer.id, transfer);
    return { transfer_id: transfer.id, offset: 0 };
  }

  /**
   * One chunk, appended at `offset` (where the last one ended), `length` bytes as announced
   * by Content-Length. A chunk cut short or too long gives the transfer up.
   */
  async chunk(
    vmId: string,
    grant: CopyGrant,
    transferId: string,
    offset: number,
    length: number | undefined,
    body: Readable,
  ): Promise<ReplicaTransfer> {
    const transfer = this.transferOf(vmId, grant, transferId);
    if (length === undefined || length < 1 || length > MAX_REPLICA_CHUNK_BYTES) {
      throw new ReplicaTransferInvalidError(
        `a chunk needs a Content-Length from 1 to ${MAX_REPLICA_CHUNK_BYTES} bytes`,
      );
    }
    if (transfer.busy || offset !== transfer.received) {
      throw new ReplicaConflictError(
        `transfer ${transferId} is at offset ${transfer.received}, not ${offset}`,
      );
    }
    if (offset + length > transfer.request.size_bytes) {
      await this.abandon(transfer, 'a chunk past the announced size');
      throw new ReplicaTransferInvalidError(
        `the chunk ends past the file's announced size_bytes ${transfer.request.size_bytes}`,
      );
    }
    // Busy before the first wait: a second chunk at the same offset (or a finish) meanwhile is
    // refused, never taken twice.
    transfer.busy = true;
    const room = await this.room(transfer).catch((error: unknown) => {
      transfer.busy = false;
      throw error;
    });
    if (length > room) {
      transfer.busy = false;
      await this.abandon(transfer, 'no room');
      throw new ReplicaNoRoomError(vmId, transfer.request.size_bytes - offset, room);
    }
    let handle: FileHandle | undefined;
    try {
      handle = await open(transfer.partial, 'r+');
      const written = await appendBody(handle, offset, length, body);
      if (written !== length)
        throw new Error(`the chunk ended after ${written} of ${length} bytes`);
      transfer.received += written;
      transfer.lastMoveMs = this.clock.now();
    } catch (error) {
      await handle?.close().catch(() => undefined);
      handle = undefined;
      await this.abandon(transfer, messageOf(error));
      throw new ReplicaTransferInvalidError(
        `transfer ${transferId} cut short: ${messageOf(error)}`,
      );
    } finally {
      await handle?.close();
      transfer.busy = false;
    }
    return { transfer_id: transfer.id, offset: transfer.received };
  }

  /**
   * The file complete: checked (qemu-img check, its chain opened with it), renamed to its
   * place, taken into the manifest (replaced whole). A full copy's chain then replaces every
   * older chain of the VM, whichever node sent it.
   */
  async finish(vmId: string, grant: CopyGrant, transferId: string): Promise<ReplicaState> {
    const transfer = this.transferOf(vmId, grant, transferId);
    if (transfer.busy)
      throw new ReplicaConflictError(`transfer ${transferId} has a chunk under way`);
    const { request } = transfer;
    if (transfer.received !== request.size_bytes) {
      throw new ReplicaConflictError(
        `transfer ${transferId} has ${transfer.received} of ${request.size_bytes} bytes`,
      );
    }
    this.transfers.delete(transfer.id);
    try {
      // Checked again, with the copy's commit under the same per-VM lock: a grant the floor
      // refuses now (a restore recorded while the transfer ran) takes nothing into the chain.
      await this.floors.admit(vmId, grant, request.kind, () => this.commit(vmId, transfer));
    } catch (error) {
      if (error instanceof ReplicaGrantStaleError) {
        await this.drop(transfer);
        this.logger.warn(`vm ${vmId}: copy from node ${transfer.source} dropped: ${error.message}`);
      }
      throw error;
    }
    if (transfer.newChain) await this.removeOlderChains(vmId, transfer.chainId);
    return this.state(vmId);
  }

  /** The received file checked, renamed to its place and taken into the manifest. */
  private async commit(vmId: string, transfer: Transfer): Promise<void> {
    const { request } = transfer;
    const backing =
      transfer.index === 0
        ? null
        : chainFileName(transfer.index - 1, transfer.index === 1 ? 'full' : 'incremental');
    try {
      // Its header must name no file but the chain's previous one (the sender chose it).
      await this.copier.check(transfer.partial, backing);
    } catch (error) {
      await this.drop(transfer);
      throw new ReplicaTransferInvalidError(
        `vm ${vmId}'s copy did not check as a qcow2 image: ${messageOf(error).slice(0, 300)}`,
      );
    }
    try {
      const file = chainFileName(transfer.index, request.kind);
      const { size, sha256 } = await fileDigest(transfer.partial);
      await rename(transfer.partial, join(transfer.chainDir, file));
      const taken: ChainFile = {
        file,
        kind: request.kind,
        backing,
        taken_at: request.taken_at,
        vm_state: request.vm_state,
        size_bytes: size,
        sha256,
      };
      const chain = transfer.newChain ? undefined : await this.current(vmId);
      const files = [...(chain?.manifest.files ?? []), taken];
      const described = await this.copier.describe(join(transfer.chainDir, file));
      const manifest: BackupManifest = {
        format: MANIFEST_FORMAT,
        vm_id: vmId,
        node_id: transfer.source,
        chain_id: transfer.chainId,
        vm: request.vm ?? chain?.manifest.vm ?? {},
        create_request: request.create_request ?? chain?.manifest.create_request ?? {},
        hypervisor: {
          qemu_img: described.tool,
          machine: 'q35',
          disk_virtual_size_bytes: described.virtualSizeBytes,
        },
        files,
        restore: `qemu-img convert -O qcow2 ${file} ${vmId}.qcow2 (in this folder: the VM's whole disk as of the last file's taken_at)`,
      };
      await this.folder.writeManifest(transfer.chainDir, manifest);
    } catch (error) {
      await this.drop(transfer);
      throw error;
    }
  }

  /** The room a copy may take (copyRoomBytes), less what transfers under way will still write. */
  private async room(except?: Transfer): Promise<number> {
    const room = await copyRoomBytes(this.config.diskDir, this.diskRoom, this.sidecars);
    let pending = 0;
    for (const transfer of this.transfers.values()) {
      if (transfer !== except) pending += transfer.request.size_bytes - transfer.received;
    }
    return Math.max(0, room - pending);
  }

  /** The VM's newest chain held here; undefined when none. */
  private async current(vmId: string): Promise<Chain | undefined> {
    const { chains } = await this.folder.chains(vmId);
    return chains[chains.length - 1];
  }

  private transferOf(vmId: string, grant: CopyGrant, transferId: string): Transfer {
    const transfer = this.transfers.get(transferId);
    if (!transfer || transfer.vmId !== vmId || transfer.source !== grant.source) {
      throw new ReplicaTransferGoneError(vmId, transferId);
    }
    return transfer;
  }

  private async abandonVm(vmId: string, why: string): Promise<void> {
    for (const transfer of [...this.transfers.values()]) {
      if (transfer.vmId === vmId) await this.abandon(transfer, why);
    }
  }

  private async abandon(transfer: Transfer, why: string): Promise<void> {
    this.transfers.delete(transfer.id);
    await this.drop(transfer);
    this.logger.warn(`vm ${transfer.vmId}: copy from node ${transfer.source} given up: ${why}`);
  }

  /** What a failed transfer wrote: its partial file, and a new chain's folder with it. */
  private async drop(transfer: Transfer): Promise<void> {
    await rm(transfer.newChain ? transfer.chainDir : transfer.partial, {
      recursive: true,
      force: true,
    });
  }

  private async giveUpIdle(): Promise<void> {
    const nowMs = this.clock.now();
    for (const transfer of [...this.transfers.values()]) {
      if (!transfer.busy && nowMs - transfer.lastMoveMs > TRANSFER_IDLE_MS) {
        await this.abandon(transfer, `idle for ${TRANSFER_IDLE_MS / 60_000} minutes`);
      }
    }
  }

  /** Once a new full chain is complete: every other chain of the VM, and what copies cut short left. */
  private async removeOlderChains(vmId: string, keep: string): Promise<void> {
    const { chains, broken } = await this.folder.chains(vmId);
    for (const chain of chains) {
      if (chain.id !== keep) await this.folder.remove(chain.dir);
    }
    for (const dir of broken) {
      if (!dir.endsWith(keep) && ![...this.transfers.values()].some((t) => t.chainDir === dir)) {
        await this.folder.remove(dir);
      }
    }
  }
}
