import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killQemusUnder } from './qemu-processes';

const folders = new Set<string>();

/**
 * A temporary folder of the spec file's own, in the run's folder (TMPDIR, see test-run.ts).
 * After the file's tests (spec-file.cleanup.ts) every QEMU process started from it is killed
 * and it is removed, also when a test failed.
 */
export function scratchFolder(prefix: string): string {
  const folder = mkdtempSync(join(tmpdir(), prefix));
  folders.add(folder);
  return folder;
}

/** Kills the QEMU processes of every scratch folder, then removes the folders. */
export function removeScratchFolders(): void {
  for (const folder of folders) {
    killQemusUnder(folder);
    rmSync(folder, { recursive: true, force: true });
    folders.delete(folder);
  }
}
