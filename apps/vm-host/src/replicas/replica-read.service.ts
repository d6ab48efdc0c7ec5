import { Injectable, Logger } from '@nestjs/common';
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { CopyReadGrant } from '@app/daemon';
import { ReplicaChainRead } from '@app/fleet-domain';
import { CopyThrottle } from '../vms/copies/copy-throttle';
import { throttledFile } from '../vms/copies/throttled-file';
import { Chain } from '../vms/copies/backup-folder';
import { ReplicasService } from './replicas.service';
import { ReplicaNotHeldError } from './replicas.errors';

/**
 * The holder's side of a restore on another node: the chain of a VM's copy up to a point, and
 * its files, read by the node a read grant names, through the node's copy throttle. Serving
 * the chain marks the copy restored (the grant's issued-at): a copy grant issued before it
 * writes nothing more here (ReplicaGrantFloor).
 */
@Injectable()
export class ReplicaReadService {
  private readonly logger = new Logger('Replicas');

  constructor(
    private readonly replicas: ReplicasService,
    private readonly throttle: CopyThrottle,
  ) {}

  /** The files of chain `<chain_id>` up to `<index>` (point), in chain order. */
  async chain(vmId: string, grant: CopyReadGrant, point: string): Promise<ReplicaChainRead> {
    const [chainId, indexText] = point.split('/');
    const index = Number(indexText);
    const chain = await this.chainOf(vmId, chainId);
    if (!Number.isInteger(index) || index >= chain.manifest.files.length) {
      throw new ReplicaNotHeldError(
        `vm ${vmId}: chain ${chainId} here has ${chain.manifest.files.length} file(s), no point ${point}`,
      );
    }
    if (grant.moves) await this.replicas.floors.restored(vmId, grant.issuedAtMs);
    this.logger.log(
      `vm ${vmId}: its copy ${point} read by node ${grant.reader} (a restore there${grant.moves ? '; copy grants issued before it write nothing more here' : ', as a new VM'})`,
    );
    return {
      vm_id: vmId,
      chain_id: chain.id,
      files: chain.manifest.files
        .slice(0, index + 1)
        .map(({ file, kind, taken_at, size_bytes, sha256 }) => ({
          file,
          kind,
          taken_at,
          size_bytes,
          sha256,
        })),
    };
  }

  /** One file of the chain, whole, as the manifest lists it: its size and its bytes, throttled. */
  async file(
    vmId: string,
    chainId: string,
    file: string,
  ): Promise<{ sizeBytes: number; body: Readable }> {
    const chain = await this.chainOf(vmId, chainId);
    const listed = chain.manifest.files.find((entry) => entry.file === file);
    if (!listed) throw new ReplicaNotHeldError(`vm ${vmId}: chain ${chainId} has no file ${file}`);
    const path = join(chain.dir, listed.file);
    const found = await lstat(path).catch(() => undefined);
    // Never a link: the file read is the chain's own.
    if (!found?.isFile()) throw new ReplicaNotHeldError(`vm ${vmId}: ${file} is not here`);
    return {
      sizeBytes: found.size,
      body: throttledFile(this.throttle, path),
    };
  }

  private async chainOf(vmId: string, chainId: string): Promise<Chain> {
    const { chains } = await this.replicas.folder.chains(vmId);
    const chain = chains.find((candidate) => candidate.id === chainId);
    if (!chain) throw new ReplicaNotHeldError(`vm ${vmId}: no chain ${chainId} of its copy here`);
    return chain;
  }
}
