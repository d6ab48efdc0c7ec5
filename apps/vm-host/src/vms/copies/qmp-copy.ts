import type { QmpSession } from '../qemu/qmp.client';

/** The one copy job a VM's QEMU runs at a time, and the node its target is attached as. */
export const COPY_JOB_ID = 'ppn-copy';
export const COPY_TARGET_NODE = 'ppn-copy-target';
/** Every bitmap the agent adds starts so; the rest of the name is the chain it belongs to. */
export const COPY_BITMAP_PREFIX = 'ppn-copy-';
/** How often a running copy job is asked how it is doing. */
const JOB_POLL_MS = 250;

/** A copy to a peer node tracks its changes in a bitmap of its own, one per peer. */
export const REPLICA_BITMAP_PREFIX = 'ppn-replica-';

export function replicaBitmapName(peerNodeId: string): string {
  return `${REPLICA_BITMAP_PREFIX}${peerNodeId}`;
}

/**
 * The bitmaps a new full copy on `bitmap` replaces: a backup chain's, every other backup
 * chain's (only the newest chain grows); a peer's, its own earlier one alone (the backups'
 * and the other peers' keep growing).
 */
export function replacedBitmap(bitmap: string, existing: string): boolean {
  if (bitmap.startsWith(REPLICA_BITMAP_PREFIX)) return existing === bitmap;
  return existing.startsWith(COPY_BITMAP_PREFIX);
}

export function copyBitmapName(chainId: string): string {
  return `${COPY_BITMAP_PREFIX}${chainId}`;
}

interface QmpBitmap {
  name: string;
  /** Set by QEMU on a persistent bitmap it found in use when it opened the image (a crash). */
  inconsistent?: boolean;
  busy?: boolean;
}

/** The VM's disk as QEMU has it open: its format node (bitmaps live there) and its size. */
export interface DiskNode {
  node: string;
  virtualSize: number;
  bitmaps: QmpBitmap[];
}

interface QmpBlock {
  device?: string;
  inserted?: {
    'node-name'?: string;
    file?: string;
    image?: { filename?: string; 'virtual-size'?: number };
    'dirty-bitmaps'?: QmpBitmap[];
  };
}

interface QmpJob {
  id: string;
  status: string;
  error?: string;
}

/**
 * The format node of the VM's disk, found by its file: `-drive if=virtio` leaves QEMU to name
 * it (`#block123`, different at each start), so it is asked at each copy.
 */
export async function diskNode(qmp: QmpSession, diskPath: string): Promise<DiskNode> {
  const blocks = (await qmp.execute('query-block')) as QmpBlock[];
  for (const { inserted } of Array.isArray(blocks) ? blocks : []) {
    const filename = inserted?.image?.filename ?? inserted?.file;
    const node = inserted?.['node-name'];
    const virtualSize = inserted?.image?.['virtual-size'];
    if (filename !== diskPath || !node || typeof virtualSize !== 'number') continue;
    return { node, virtualSize, bitmaps: inserted?.['dirty-bitmaps'] ?? [] };
  }
  throw new Error(`QEMU has no disk ${diskPath} open`);
}

/**
 * Why the next copy on `bitmap` cannot be incremental, or null when it can: the bitmap is
 * missing (a new chain, a QEMU that never closed the image cleanly, so never stored it),
 * marked inconsistent (QEMU was killed while it was in use) or busy.
 */
export function whyFull(disk: DiskNode, bitmap: string | null): string | null {
  if (bitmap === null) return 'no chain to add to';
  const found = disk.bitmaps.find((candidate) => candidate.name === bitmap);
  if (!found) return `QEMU has no bitmap ${bitmap} (a crash or a power cut, or a new disk)`;
  if (found.inconsistent) return `bitmap ${bitmap} is inconsistent (QEMU ended uncleanly)`;
  if (found.busy) return `bitmap ${bitmap} is busy`;
  return null;
}

/**
 * What a copy cut short may have left in QEMU (the agent killed during a job): the job,
 * cancelled and dismissed, and the target node, removed. True when anything was left.
 */
export async function clearLeftovers(qmp: QmpSession): Promise<boolean> {
  let left = false;
  const jobs = (await qmp.execute('query-jobs')) as QmpJob[];
  const job = jobs.find(({ id }) => id === COPY_JOB_ID);
  if (job) {
    left = true;
    if (job.status !== 'concluded') {
      await qmp.execute('job-cancel', { id: COPY_JOB_ID }).catch(() => undefined);
      await concluded(qmp);
    }
    await qmp.execute('job-dismiss', { id: COPY_JOB_ID });
  }
  const nodes = (await qmp.execute('query-named-block-nodes', { flat: true })) as Array<{
    'node-name'?: string;
  }>;
  if (nodes.some((node) => node['node-name'] === COPY_TARGET_NODE)) {
    left = true;
    await qmp.execute('blockdev-del', { 'node-name': COPY_TARGET_NODE });
  }
  return left;
}

/**
 * A full copy into `target` (a qcow2 file as large as the disk), and the chain's new persistent
 * bitmap added in the same transaction, so it records every write after the copy's point in
 * time. The agent's bitmaps of other chains are removed first: only the newest chain grows.
 */
export async function fullCopy(
  qmp: QmpSession,
  disk: DiskNode,
  target: string,
  bitmap: string,
  started: () => void = () => undefined,
): Promise<void> {
  for (const { name } of disk.bitmaps) {
    if (replacedBitmap(bitmap, name)) {
      await qmp.execute('block-dirty-bitmap-remove', { node: disk.node, name });
    }
  }
  await withTarget(qmp, target, async () => {
    await qmp.execute('transaction', {
      actions: [
        {
          type: 'block-dirty-bitmap-add',
          data: { node: disk.node, name: bitmap, persistent: true },
        },
        { type: 'blockdev-backup', data: backupJob(disk, 'full') },
      ],
    });
    started();
    await jobDone(qmp);
  });
}

/**
 * An incremental copy: the clusters `bitmap` marks, into `target` (a qcow2 file whose backing
 * is the chain's last file). QEMU clears the bitmap only when the job succeeds; a failed or
 * cancelled job merges it back, so the next copy still has every change.
 */
export async function incrementalCopy(
  qmp: QmpSession,
  disk: DiskNode,
  target: string,
  bitmap: string,
  started: () => void = () => undefined,
): Promise<void> {
  await withTarget(qmp, target, async () => {
    await qmp.execute('blockdev-backup', { ...backupJob(disk, 'incremental'), bitmap });
    started();
    await jobDone(qmp);
  });
}

function backupJob(disk: DiskNode, sync: 'full' | 'incremental'): Record<string, unknown> {
  // Not dismissed on its own: a job that ends while no one listens is still there to be read.
  return {
    'job-id': COPY_JOB_ID,
    device: disk.node,
    target: COPY_TARGET_NODE,
    sync,
    'auto-dismiss': false,
  };
}

/**
 * The target attached as a node for the job's length. Its backing is not opened (`null`): the
 * job writes only clusters, and the file keeps naming its backing for qemu-img.
 */
async function withTarget(qmp: QmpSession, target: string, work: () => Promise<void>) {
  await qmp.execute('blockdev-add', {
    'node-name': COPY_TARGET_NODE,
    driver: 'qcow2',
    file: { driver: 'file', filename: target },
    backing: null,
  });
  try {
    await work();
  } finally {
    await qmp.execute('blockdev-del', { 'node-name': COPY_TARGET_NODE }).catch(() => undefined);
  }
}

/** Waits for the copy job to conclude, dismisses it, and throws its error if it had one. */
async function jobDone(qmp: QmpSession): Promise<void> {
  const job = await concluded(qmp);
  await qmp.execute('job-dismiss', { id: COPY_JOB_ID });
  if (job.error !== undefined) throw new Error(`QEMU's copy job failed: ${job.error}`);
}

async function concluded(qmp: QmpSession): Promise<QmpJob> {
  for (;;) {
    const jobs = (await qmp.execute('query-jobs')) as QmpJob[];
    const job = jobs.find(({ id }) => id === COPY_JOB_ID);
    if (!job) throw new Error(`QEMU's copy job is gone`);
    if (job.status === 'concluded') return job;
    await new Promise((resolve) => setTimeout(resolve, JOB_POLL_MS));
  }
}
