import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ID_PATTERN } from '@app/fleet-domain';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../files/vm-files';

export const MANIFEST_FORMAT = 'ppn-fleet-backup/1';
const MANIFEST = 'manifest.json';
/** `20261205T041700Z-3f2a`: when its full copy began (so names sort by age), then random. */
const CHAIN_ID = /^\d{8}T\d{6}Z-[0-9a-f]{4}$/;
const CHAIN_FILE = /^(\d{4})-(full|incremental)\.qcow2$/;
/** What a copy cut short may leave in a chain's folder: its file, before or after its rename. */
const OWN_FILE = /^(?:\d{4}(?:-full|-incremental|\.partial)\.qcow2|manifest\.json\.tmp)$/;

export type BackupKind = 'full' | 'incremental';

/** One file of a chain, in the manifest. */
export interface ChainFile {
  file: string;
  kind: BackupKind;
  /** The file before it in the chain (its qcow2 backing), null for the full one. */
  backing: string | null;
  taken_at: string;
  /** Whether the VM ran (copied by QEMU) or was stopped (copied from its file). */
  vm_state: 'running' | 'stopped';
  size_bytes: number;
  sha256: string;
}

/**
 * A chain's manifest: enough to know the VM and read its disk without this product (qemu-img
 * alone, see `restore`).
 */
export interface BackupManifest {
  format: typeof MANIFEST_FORMAT;
  vm_id: string;
  node_id: string;
  chain_id: string;
  /** The VM's record on its node (its sidecar) as of the chain's last backup. */
  vm: Record<string, unknown>;
  /** What would make the same VM again (POST /v1/vms), from that record. */
  create_request: Record<string, unknown>;
  hypervisor: { qemu_img: string; machine: string; disk_virtual_size_bytes: number | null };
  /** In chain order: the full copy first, each next one backed by the one before. */
  files: ChainFile[];
  restore: string;
}

/** A chain as found on disk: its manifest, and any file in its folder that it does not list. */
export interface Chain {
  id: string;
  dir: string;
  manifest: BackupManifest;
  leftovers: string[];
}

/**
 * The layout of VM_BACKUP_DIR: `<vm_id>/<chain_id>/` per chain, holding `NNNN-full.qcow2`,
 * `NNNN-incremental.qcow2` (each backed by the one before) and `manifest.json`. A copy is
 * written as `NNNN.partial.qcow2` and renamed once checked; the manifest is replaced whole.
 * Everything private to the agent.
 */
export class BackupFolder {
  constructor(readonly root: string) {}

  vmDir(vmId: string): string {
    if (!ID_PATTERN.test(vmId)) throw new Error(`not a vm id: ${vmId}`);
    return join(this.root, vmId);
  }

  /**
   * A new chain's folder, made private; its id sorts after every older chain's. VM_BACKUP_DIR
   * itself must exist: a USB disk or NAS not mounted leaves an empty mount point, or none, and
   * a backup must not fill the disk under it instead.
   */
  async newChain(vmId: string, nowMs: number): Promise<{ id: string; dir: string }> {
    const root = await stat(this.root).catch(() => undefined);
    if (!root?.isDirectory()) {
      throw new Error(`VM_BACKUP_DIR ${this.root} is not a folder (is its disk mounted?)`);
    }
    await mkdir(this.vmDir(vmId), { mode: PRIVATE_DIR_MODE }).catch(
      (error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      },
    );
    const stamp = new Date(nowMs)
      .toISOString()
      .replace(/[-:]/g, '')
      .replace(/\.\d+Z$/, 'Z');
    const id = `${stamp}-${randomBytes(2).toString('hex')}`;
    const dir = join(this.vmDir(vmId), id);
    await mkdir(dir, { mode: PRIVATE_DIR_MODE });
    return { id, dir };
  }

  /**
   * The VM's chains, oldest first, each with the files of ours its manifest does not list (a
   * copy cut short); anything else in the folder is left alone. A chain folder without a
   * manifest that holds only such files is a first copy cut short: `broken` lists those, for
   * the caller to remove. One with a manifest that cannot be read is neither: it is kept.
   */
  async chains(vmId: string): Promise<{ chains: Chain[]; broken: string[] }> {
    const entries = await readdir(this.vmDir(vmId), { withFileTypes: true }).catch(() => []);
    const chains: Chain[] = [];
    const broken: string[] = [];
    for (const entry of entries.filter((e) => e.isDirectory() && CHAIN_ID.test(e.name)).sort()) {
      const dir = join(this.vmDir(vmId), entry.name);
      const names = await readdir(dir);
      const manifest = await readManifest(join(dir, MANIFEST), vmId, entry.name);
      if (!manifest) {
        if (!names.includes(MANIFEST) && names.every((name) => OWN_FILE.test(name))) {
          broken.push(dir);
        }
        continue;
      }
      const listed = new Set(manifest.files.map(({ file }) => file));
      const leftovers = names.filter((name) => OWN_FILE.test(name) && !listed.has(name));
      chains.push({ id: entry.name, dir, manifest, leftovers });
    }
    return { chains, broken };
  }

  /** The manifest replaced whole (a temporary file renamed), so it is never half written. */
  async writeManifest(dir: string, manifest: BackupManifest): Promise<void> {
    const path = join(dir, MANIFEST);
    await writeFile(`${path}.tmp`, JSON.stringify(manifest, null, 2) + '\n', {
      mode: PRIVATE_FILE_MODE,
    });
    await rename(`${path}.tmp`, path);
  }

  async remove(path: string): Promise<void> {
    await rm(path, { recursive: true, force: true });
  }
}

/** The name of a chain's `index`-th file. */
export function chainFileName(index: number, kind: BackupKind): string {
  return `${String(index).padStart(4, '0')}-${kind}.qcow2`;
}

export function partialFileName(index: number): string {
  return `${String(index).padStart(4, '0')}.partial.qcow2`;
}

/** A file's size and sha256, read once. */
export async function fileDigest(path: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return { size: (await stat(path)).size, sha256: hash.digest('hex') };
}

async function readManifest(
  path: string,
  vmId: string,
  chainId: string,
): Promise<BackupManifest | undefined> {
  try {
    const manifest = JSON.parse(await readFile(path, 'utf8')) as BackupManifest;
    const sound =
      manifest.format === MANIFEST_FORMAT &&
      manifest.vm_id === vmId &&
      manifest.chain_id === chainId &&
      Array.isArray(manifest.files) &&
      manifest.files.length > 0 &&
      manifest.files.every(
        (file, index) =>
          CHAIN_FILE.exec(file.file)?.[1] === String(index).padStart(4, '0') &&
          file.kind === (index === 0 ? 'full' : 'incremental') &&
          typeof file.taken_at === 'string' &&
          Number.isSafeInteger(file.size_bytes),
      );
    return sound ? manifest : undefined;
  } catch {
    return undefined;
  }
}
