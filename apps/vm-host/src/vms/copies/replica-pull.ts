import { Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { request as httpRequest, IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { Transform, TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { validateInput } from '@app/daemon';
import { ReplicaChainFile, ReplicaChainRead, RestorePoint, RestorePull } from '@app/fleet-domain';
import { VmHostConfig } from '../../config/vm-host.config';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../files/vm-files';
import { messageOf } from '../vms.errors';
import { chainFileName, fileDigest } from './backup-folder';
import { CopyThrottle } from './copy-throttle';
import { CopyShutdown } from './copy-shutdown';
import { splitAddress } from './peer-transport';
import { VmCopier } from './vm-copier';
import { RestoreSourceError } from './vm-restores.errors';
import { abortAt, pullDeadline } from './pull-deadline';
import { copyRoomBytes } from './copy-room';
import { VmDiskRoom } from '../admission/vm-disk-room';
import { VmSidecars } from '../files/vm-sidecars';

/** The most of the holder's chain answer read: 64 files of a few hundred bytes. */
const MAX_CHAIN_ANSWER_BYTES = 256 * 1024;
/** A holder that says nothing for this long is given up (a slow file still moves). */
const HOLDER_TIMEOUT_MS = 60_000;

/** A chain pulled into this node's staging folder, checked: what a restore converts. */
export interface PulledChain {
  /** The private staging folder: the caller removes it (remove()) once done. */
  dir: string;
  /** The chain's last file pulled (the point), read with every file before it. */
  top: string;
  point: RestorePoint;
}

/**
 * Pulls a VM's copy from the node that holds it (a replica chain) into a private staging
 * folder on this node, `<VM_DISK_DIR>/pulls/<vm_id>-<random>/`, with a read grant the
 * controller issued: the holder's chain up to a point, file by file through the node's copy
 * throttle, each checked against the holder's manifest (size, sha256) and with qemu-img (its
 * backing the chain's previous file alone) before the next. A restore on a node that does not
 * hold the copy uses it; a cold move will too.
 */
@Injectable()
export class ReplicaPuller implements OnApplicationBootstrap {
  private readonly logger = new Logger('Restores');
  readonly root: string;

  constructor(
    private readonly config: VmHostConfig,
    private readonly copier: VmCopier,
    private readonly throttle: CopyThrottle,
    /** Absent (a unit test's puller): the free space alone counts (copyRoomBytes). */
    @Optional() private readonly diskRoom?: VmDiskRoom,
    @Optional() private readonly sidecars?: VmSidecars,
    /** Ends the pulls under way as the agent stops. */
    @Optional() private readonly shutdown?: CopyShutdown,
  ) {
    this.root = join(config.diskDir, 'pulls');
  }

  /** What a pull cut short by a killed agent left (its restore is rolled back at start too). */
  async onApplicationBootstrap(): Promise<void> {
    await rm(this.root, { recursive: true, force: true }).catch((error: unknown) =>
      this.logger.warn(`${this.root} not swept: ${messageOf(error)}`),
    );
  }

  /**
   * Aborted (its staging removed) at the read grant's expiry or `deadlineMs`, whichever is
   * first (pullDeadline): a stalled holder never keeps the restore's admission lock for long.
   */
  async pull(vmId: string, from: RestorePull, deadlineMs?: number): Promise<PulledChain> {
    const nowMs = Date.now();
    const abort = abortAt(pullDeadline(from.grant, nowMs, deadlineMs), nowMs);
    try {
      const signal = this.shutdown
        ? AbortSignal.any([abort.signal, this.shutdown.signal])
        : abort.signal;
      return await this.pullUntil(vmId, from, signal);
    } catch (error) {
      if (!abort.signal.aborted) throw error;
      throw new RestoreSourceError(
        `source.pull: vm ${vmId}'s copy from node ${from.node_id} not pulled in time: ${messageOf(abort.signal.reason)}`,
      );
    } finally {
      abort.dispose();
    }
  }

  private async pullUntil(
    vmId: string,
    from: RestorePull,
    signal: AbortSignal,
  ): Promise<PulledChain> {
    const chain = await this.chainOf(vmId, from, signal);
    const wanted = chain.files.reduce((sum, file) => sum + file.size_bytes, 0);
    const room = await this.room();
    if (wanted > room) {
      throw new RestoreSourceError(
        `source.pull: no room to pull vm ${vmId}'s copy from node ${from.node_id}: ${mb(wanted)} MB, ${mb(room)} MB free in VM_DISK_DIR beyond its reserve and the room promised to its VMs' disks`,
      );
    }
    await mkdir(this.root, { recursive: true, mode: PRIVATE_DIR_MODE });
    const dir = join(this.root, `${vmId}-${randomBytes(4).toString('hex')}`);
    await mkdir(dir, { mode: PRIVATE_DIR_MODE });
    try {
      for (const [index, file] of chain.files.entries()) {
        await this.pullFile(vmId, from, chain.chain_id, file, dir, signal);
        const backing = index === 0 ? null : chain.files[index - 1].file;
        await this.copier.check(join(dir, file.file), backing).catch((error: unknown) => {
          throw new RestoreSourceError(
            `source.pull: ${file.file} of vm ${vmId}'s copy from node ${from.node_id} is not a file of its chain (${messageOf(error).slice(0, 200)})`,
          );
        });
      }
    } catch (error) {
      await this.remove(dir);
      throw error;
    }
    const last = chain.files[chain.files.length - 1];
    this.logger.log(
      `vm ${vmId}: its copy ${from.backup_id} pulled from node ${from.node_id} (${chain.files.length} file(s), ${mb(wanted)} MB), checked`,
    );
    return {
      dir,
      top: join(dir, last.file),
      point: {
        source: 'replica',
        backup_id: from.backup_id,
        kind: last.kind,
        taken_at: last.taken_at,
        size_bytes: last.size_bytes,
      },
    };
  }

  async remove(dir: string): Promise<void> {
    await rm(dir, { recursive: true, force: true });
  }

  /** The holder's chain up to the point, checked to be that chain, in order. */
  private async chainOf(
    vmId: string,
    from: RestorePull,
    signal: AbortSignal,
  ): Promise<ReplicaChainRead> {
    const path = `/v1/replicas/${vmId}/read?point=${encodeURIComponent(from.backup_id)}`;
    const response = await this.get(from, path, signal);
    const text = await readBounded(response, MAX_CHAIN_ANSWER_BYTES);
    if (response.statusCode !== 200) {
      throw new RestoreSourceError(
        `source.pull: node ${from.node_id} answered the read of vm ${vmId}'s copy with ${response.statusCode}${holderMessage(text)}`,
      );
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const { instance } = await validateInput(ReplicaChainRead, body, 'body');
    const [chainId, index] = from.backup_id.split('/');
    const sound =
      instance?.vm_id === vmId &&
      instance.chain_id === chainId &&
      instance.files.length === Number(index) + 1 &&
      instance.files.every(
        (file, at) => file.file === chainFileName(at, at === 0 ? 'full' : 'incremental'),
      );
    if (!instance || !sound) {
      throw new RestoreSourceError(
        `source.pull: node ${from.node_id} answered no chain ${from.backup_id} of vm ${vmId}`,
      );
    }
    return instance;
  }

  /** One file into `<dir>/<file>`: a partial file renamed once its size and sha256 match. */
  private async pullFile(
    vmId: string,
    from: RestorePull,
    chainId: string,
    file: ReplicaChainFile,
    dir: string,
    signal: AbortSignal,
  ): Promise<void> {
    const response = await this.get(
      from,
      `/v1/replicas/${vmId}/read/files/${chainId}/${file.file}`,
      signal,
    );
    if (response.statusCode !== 200) {
      const text = await readBounded(response, MAX_CHAIN_ANSWER_BYTES);
      throw new RestoreSourceError(
        `source.pull: node ${from.node_id} answered the read of ${file.file} with ${response.statusCode}${holderMessage(text)}`,
      );
    }
    const partial = join(dir, `${file.file}.partial`);
    let received = 0;
    const bounded = new Transform({
      transform: (chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback) => {
        received += chunk.length;
        if (received > file.size_bytes) {
          done(new Error(`more than its ${file.size_bytes} bytes`));
          return;
        }
        done(null, chunk);
      },
    });
    try {
      await pipeline(
        response,
        bounded,
        this.throttle.stream(),
        createWriteStream(partial, { mode: PRIVATE_FILE_MODE, flags: 'wx' }),
        { signal },
      );
    } catch (error) {
      throw new RestoreSourceError(
        `source.pull: ${file.file} of vm ${vmId}'s copy from node ${from.node_id} cut short: ${messageOf(error)}`,
      );
    }
    const digest = await fileDigest(partial);
    if (digest.size !== file.size_bytes || digest.sha256 !== file.sha256) {
      throw new RestoreSourceError(
        `source.pull: ${file.file} of vm ${vmId}'s copy from node ${from.node_id} is not what its manifest says (size or sha256)`,
      );
    }
    await rename(partial, join(dir, file.file));
  }

  private get(from: RestorePull, path: string, signal: AbortSignal): Promise<IncomingMessage> {
    const { host, port } = splitAddress(from.address);
    return new Promise((resolve, reject) => {
      const request = httpRequest(
        {
          host,
          port,
          method: 'GET',
          path,
          headers: { Authorization: `Bearer ${from.grant}` },
          timeout: HOLDER_TIMEOUT_MS,
          signal,
        },
        resolve,
      );
      request.on('timeout', () =>
        request.destroy(new Error(`no answer within ${HOLDER_TIMEOUT_MS} ms`)),
      );
      request.on('error', (error) =>
        reject(
          new RestoreSourceError(
            `source.pull: node ${from.node_id} at ${from.address}: ${error.message}`,
          ),
        ),
      );
      request.end();
    });
  }

  /** The room a pull may take: the same rule as a copy a peer receives (copyRoomBytes). */
  private room(): Promise<number> {
    return copyRoomBytes(this.config.diskDir, this.diskRoom, this.sidecars);
  }
}

async function readBounded(response: IncomingMessage, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response) {
    size += (chunk as Buffer).length;
    // A holder that would send more is not read on (nor waited for).
    if (size > limit) {
      response.destroy();
      break;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The holder's own message, printable and short: never more of its reply. */
function holderMessage(text: string): string {
  let message: unknown;
  try {
    message = (JSON.parse(text) as { message?: unknown }).message;
  } catch {
    return '';
  }
  const said = Array.isArray(message) ? message.join('; ') : message;
  return typeof said === 'string' ? `: ${said.replace(/[^\x20-\x7e]/g, '?').slice(0, 300)}` : '';
}

function mb(bytes: number): string {
  return (Math.max(0, bytes) / 1e6).toFixed(1);
}
