import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MAX_FENCE_AFTER_S, MAX_VM_COPIES, MIN_FENCE_AFTER_S } from '@app/fleet-domain';
import { PRIVATE_FILE_MODE } from '../files/vm-files';

/** What a node remembers of its lease across agent restarts (`<VM_DISK_DIR>/fencing.json`). */
export interface RememberedLease {
  /** The last renewing answer's fence_after_s: fencing is on from the first one. */
  fence_after_s: number;
  /** When (wall clock, ms since the epoch) the heartbeat that last renewed the lease was sent. */
  renewed_at_ms: number;
  /** The controller's default copy count with it (copies_default); absent: unknown. */
  copies_default?: number;
}

const FILE = 'fencing.json';

/**
 * The lease remembered in the agent's state folder, private (0600), written whole (a
 * temporary file renamed), so an agent started again knows fencing is on and holds its
 * protected VMs until a heartbeat renews the lease, even before its first answer.
 */
export class LeaseFile {
  private readonly path: string;

  constructor(root: string) {
    this.path = join(root, FILE);
  }

  /** The lease remembered; undefined when none is (fencing never on here) or it is unreadable. */
  async read(): Promise<RememberedLease | 'unreadable' | undefined> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      return 'unreadable';
    }
    try {
      const stored = JSON.parse(text) as Partial<RememberedLease>;
      const {
        fence_after_s: fenceAfterS,
        renewed_at_ms: renewedAtMs,
        copies_default: copies,
      } = stored;
      const valid =
        Number.isInteger(fenceAfterS) &&
        fenceAfterS! >= MIN_FENCE_AFTER_S &&
        fenceAfterS! <= MAX_FENCE_AFTER_S &&
        Number.isSafeInteger(renewedAtMs);
      if (!valid) return 'unreadable';
      // A default that cannot be read is forgotten: a VM without a policy then counts as protected.
      const copiesKnown = Number.isInteger(copies) && copies! >= 0 && copies! <= MAX_VM_COPIES;
      return {
        fence_after_s: fenceAfterS!,
        renewed_at_ms: renewedAtMs!,
        ...(copiesKnown && { copies_default: copies }),
      };
    } catch {
      return 'unreadable';
    }
  }

  async write(lease: RememberedLease): Promise<void> {
    const temporary = `${this.path}.tmp`;
    await writeFile(temporary, JSON.stringify(lease), { mode: PRIVATE_FILE_MODE });
    await rename(temporary, this.path);
  }
}
