import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';

/** Where the controller's package installs the image builder. */
export const INSTALLED_IMAGE_BUILDER = '/usr/share/ppn-fleet/build-debian-image.sh';
/** Where the builder writes by default, and where the agents' docs put base images. */
export const DEFAULT_IMAGES_DIR = '/var/lib/vm-fleet-images';
/** The agent's VM_DISK_DIR default. */
export const DEFAULT_DISK_DIR = '/var/lib/vm-fleet';

/**
 * The image builder: a checkout's deploy/images/build-debian-image.sh when this CLI runs from one
 * (found above its own file), else the packaged copy. The installed CLI (under /usr) always runs
 * the packaged copy: root must not run whatever script a folder above it happens to hold.
 */
export function imageBuilderPath(from = __dirname): string {
  if (from.startsWith('/usr/')) return INSTALLED_IMAGE_BUILDER;
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) {
    const inCheckout = join(dir, 'deploy', 'images', 'build-debian-image.sh');
    if (existsSync(inCheckout)) return inCheckout;
  }
  return INSTALLED_IMAGE_BUILDER;
}

/** One VM disk of a node and the base image it is an overlay on. */
export interface DiskBacking {
  /** The VM's id (its disk's name), or the name a deleted disk is kept under. */
  vmId: string;
  /** A deleted VM's disk, kept (VM_DISK_RETENTION_S) so the VM can be recovered. */
  deleted: boolean;
  /** The base image's absolute path, as the disk names it; undefined for none. */
  backing?: string;
}

/** A base image of a node, and the disks that name it. */
export interface NodeImage {
  path: string;
  /** undefined: named by a disk, but not there (those disks no longer start). */
  sizeBytes?: number;
  builtAt?: Date;
  disks: DiskBacking[];
}

/** Images found in the images folder and images disks name, each with the disks naming it. */
export function imagesWithDisks(
  images: Array<{ path: string; sizeBytes: number; builtAt: Date }>,
  disks: DiskBacking[],
): NodeImage[] {
  const byPath = new Map<string, NodeImage>();
  for (const image of images) byPath.set(image.path, { ...image, disks: [] });
  for (const disk of disks) {
    if (!disk.backing) continue;
    const image = byPath.get(disk.backing) ?? { path: disk.backing, disks: [] };
    image.disks.push(disk);
    byPath.set(disk.backing, image);
  }
  return [...byPath.values()].sort((a, b) => a.path.localeCompare(b.path));
}

const run = promisify(execFile);

/**
 * The base image a qcow2 names (qemu-img info; -U: a running VM's QEMU holds a lock on its disk,
 * and this only reads), made absolute against the disk's folder as QEMU resolves it.
 */
async function backingOf(disk: string): Promise<string | undefined> {
  const { stdout } = await run('qemu-img', ['info', '-U', '--output=json', disk]);
  const info = JSON.parse(stdout) as {
    'backing-filename'?: string;
    'full-backing-filename'?: string;
  };
  const named = info['full-backing-filename'] ?? info['backing-filename'];
  return named === undefined ? undefined : resolve(dirname(disk), named);
}

async function qcow2sIn(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries
      .filter((entry) => entry.isFile() && entry.name.endsWith('.qcow2'))
      .map((entry) => join(dir, entry.name));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/**
 * A node's base images (the images folder's *.qcow2) and what its agent's disks (VM_DISK_DIR's
 * disks/ and deleted/) name. Needs to read the agent's private files: root or the agent's user.
 */
export async function nodeImages(imagesDir: string, diskDir: string): Promise<NodeImage[]> {
  const images = await Promise.all(
    (await qcow2sIn(imagesDir)).map(async (path) => {
      const info = await stat(path);
      return { path, sizeBytes: info.size, builtAt: info.mtime };
    }),
  );
  const disks: DiskBacking[] = [];
  for (const deleted of [false, true]) {
    for (const disk of await qcow2sIn(join(diskDir, deleted ? 'deleted' : 'disks'))) {
      const name = disk.slice(disk.lastIndexOf('/') + 1, -'.qcow2'.length);
      const vmId = deleted ? name.slice(name.indexOf('.') + 1) : name;
      disks.push({ vmId, deleted, backing: await backingOf(disk) });
    }
  }
  return imagesWithDisks(images, disks);
}
