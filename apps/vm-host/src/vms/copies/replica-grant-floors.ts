import { Injectable } from '@nestjs/common';
import { join } from 'node:path';
import type { CopyGrant } from '@app/daemon';
import { VmHostConfig } from '../../config/vm-host.config';
import { KeyedMutex } from '../life-cycle/keyed-mutex';
import { BackupFolder } from './backup-folder';
import { ReplicaGrantFloor } from './replica-grant-floor';

/**
 * The node's one keeper of its copies' grant floors (grant-floor.json per VM): the peer's
 * transfers, the holder's reads and this node's own restores all go through it, one at a time
 * per VM, so no read-then-write of the file loses another's record, and a copy is taken into
 * its chain only while the floor still allows its grant (checked and committed under the same
 * lock). A restore recorded tells the listeners (the peer's transfers of that VM in flight are
 * given up: their grant was issued before it).
 */
@Injectable()
export class ReplicaGrantFloors {
  private readonly locks = new KeyedMutex();
  private readonly floor: ReplicaGrantFloor;
  private readonly restoredListeners: ((vmId: string) => Promise<void>)[] = [];

  constructor(config: VmHostConfig) {
    this.floor = new ReplicaGrantFloor(new BackupFolder(join(config.diskDir, 'replicas')));
  }

  /** Throws ReplicaGrantStaleError when `grant` may not write a `kind` copy of the VM now. */
  check(vmId: string, grant: CopyGrant, kind: 'full' | 'incremental'): Promise<void> {
    return this.locks.run(vmId, () => this.floor.check(vmId, grant, kind));
  }

  /**
   * `commit` (a copy taken into the VM's chain) run only if the floor allows `grant` now, no
   * restore recorded meanwhile; a full copy's grant then begins the chain's floor.
   */
  admit<T>(
    vmId: string,
    grant: CopyGrant,
    kind: 'full' | 'incremental',
    commit: () => Promise<T>,
  ): Promise<T> {
    return this.locks.run(vmId, async () => {
      await this.floor.check(vmId, grant, kind);
      const done = await commit();
      if (kind === 'full') await this.floor.chainStarted(vmId, grant);
      return done;
    });
  }

  /** The VM was restored from its copy here at `atMs`; transfers of it in flight are given up. */
  async restored(vmId: string, atMs: number): Promise<void> {
    await this.locks.run(vmId, () => this.floor.restored(vmId, atMs));
    for (const listener of this.restoredListeners) await listener(vmId);
  }

  onRestored(listener: (vmId: string) => Promise<void>): void {
    this.restoredListeners.push(listener);
  }
}
