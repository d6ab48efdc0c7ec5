import { readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CopyGrant } from '@app/daemon';
import { PRIVATE_FILE_MODE } from '../files/vm-files';
import type { BackupFolder } from './backup-folder';

const FLOOR_FILE = 'grant-floor.json';

/** A copy grant issued before the copy held began or before the VM's last restore: 403. */
export class ReplicaGrantStaleError extends Error {}

/** What a peer keeps per VM copy against replayed grants. */
interface Floor {
  /** The issued-at of the grant whose full copy began the chain held (controller's clock, ms). */
  chain_iat_ms?: number;
  /** When the VM was last restored from this copy (a read grant's issued-at, or this node's clock). */
  restored_at_ms?: number;
}

/**
 * The grant replay window of a VM's copy on this peer: a full copy is refused with a grant
 * issued before the chain held began or before the VM's last restore, an incremental with one
 * issued before that restore; so an old node still holding a grant from before a restore (it
 * comes back with its stale disk) can push nothing over the copy. Kept in
 * `<replicas>/<vm_id>/grant-floor.json`, beside the chains (their reader ignores it).
 */
export class ReplicaGrantFloor {
  constructor(private readonly folder: BackupFolder) {}

  /** Throws ReplicaGrantStaleError when `grant` may not write a `kind` copy of the VM now. */
  async check(vmId: string, grant: CopyGrant, kind: 'full' | 'incremental'): Promise<void> {
    const floor = await this.read(vmId);
    const restored = floor.restored_at_ms;
    const chain = kind === 'full' ? floor.chain_iat_ms : undefined;
    const bound = Math.max(restored ?? -Infinity, chain ?? -Infinity);
    if (bound === -Infinity) return;
    const iat = grant.issuedAtMs;
    if (iat === undefined || iat < bound) {
      const why =
        restored !== undefined && bound === restored
          ? `before the VM's last restore (${new Date(restored).toISOString()})`
          : `before the copy held here began (${new Date(bound).toISOString()})`;
      throw new ReplicaGrantStaleError(
        `vm ${vmId}: the copy grant was issued ${iat === undefined ? '(no issued-at)' : new Date(iat).toISOString()}, ${why}: a stale grant writes nothing here`,
      );
    }
  }

  /** A full copy made with `grant` is now the chain held. */
  async chainStarted(vmId: string, grant: CopyGrant): Promise<void> {
    if (grant.issuedAtMs === undefined) return;
    await this.write(vmId, { ...(await this.read(vmId)), chain_iat_ms: grant.issuedAtMs });
  }

  /** The VM was restored from this copy at `atMs` (never moved back). */
  async restored(vmId: string, atMs: number): Promise<void> {
    const floor = await this.read(vmId);
    if ((floor.restored_at_ms ?? -Infinity) >= atMs) return;
    await this.write(vmId, { ...floor, restored_at_ms: atMs });
  }

  private async read(vmId: string): Promise<Floor> {
    try {
      const parsed = JSON.parse(
        await readFile(join(this.folder.vmDir(vmId), FLOOR_FILE), 'utf8'),
      ) as Floor;
      return {
        ...(Number.isFinite(parsed.chain_iat_ms) ? { chain_iat_ms: parsed.chain_iat_ms } : {}),
        ...(Number.isFinite(parsed.restored_at_ms)
          ? { restored_at_ms: parsed.restored_at_ms }
          : {}),
      };
    } catch {
      return {};
    }
  }

  private async write(vmId: string, floor: Floor): Promise<void> {
    const dir = this.folder.vmDir(vmId);
    // Only beside a copy that is there: its folder is made by the copy's first transfer.
    if (!(await stat(dir).catch(() => undefined))?.isDirectory()) return;
    const path = join(dir, FLOOR_FILE);
    await writeFile(`${path}.tmp`, JSON.stringify(floor) + '\n', { mode: PRIVATE_FILE_MODE });
    await rename(`${path}.tmp`, path);
  }
}
