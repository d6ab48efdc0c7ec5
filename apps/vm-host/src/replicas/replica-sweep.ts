import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ID_PATTERN } from '@app/fleet-domain';
import { messageOf } from '../vms/vms.errors';
import { ReplicasService } from './replicas.service';

/**
 * At agent start, before any transfer: what transfers cut short by a killed agent left in the
 * copies it holds: a chain's files its manifest does not list (a `.partial` file, a file renamed
 * before its manifest was written, a manifest's temporary file) and a first copy's chain folder
 * that never got a manifest. Every complete chain is left as it was. (A transfer under way when
 * the agent died is gone with it: its source starts it again, replacing what it finds.)
 */
@Injectable()
export class ReplicaSweep implements OnApplicationBootstrap {
  private readonly logger = new Logger('Replicas');

  constructor(private readonly replicas: ReplicasService) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.sweep().catch((error: unknown) =>
      this.logger.warn(`copies held here not swept: ${messageOf(error)}`),
    );
  }

  /** The paths removed. */
  async sweep(): Promise<string[]> {
    const folder = this.replicas.folder;
    const removed: string[] = [];
    const entries = await readdir(folder.root, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (!entry.isDirectory() || !ID_PATTERN.test(entry.name)) continue;
      const { chains, broken } = await folder.chains(entry.name);
      for (const chain of chains) {
        for (const leftover of chain.leftovers) removed.push(join(chain.dir, leftover));
      }
      removed.push(...broken);
    }
    for (const path of removed) await folder.remove(path);
    if (removed.length > 0) {
      this.logger.log(
        `removed what ${removed.length} copy transfer(s) cut short left: ${removed.map((path) => path.slice(folder.root.length + 1)).join(', ')}`,
      );
    }
    return removed;
  }
}
