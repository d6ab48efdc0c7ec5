import type { QmpSession } from '../vms/qemu/qmp.client';

/** The move's job, the NBD node its mirror writes to, and the export it reaches on the target. */
export const MOVE_JOB_ID = 'ppn-move';
export const MOVE_TARGET_NODE = 'ppn-move-target';
export const MOVE_EXPORT = 'ppn-move';
/** How often a mirror or a migration under way is asked how it is doing. */
const POLL_MS = 100;
/**
 * The migration's bandwidth: QEMU's default (128 MiB/s) would spend seconds on a 512 MB guest
 * over a mesh that carries more; its downtime goal, QEMU's default, which the pause aims at.
 */
const MIGRATE_BANDWIDTH_BYTES_S = 1024 * 1024 * 1024;
const DOWNTIME_LIMIT_MS = 300;
/**
 * A mirror or migration that sends nothing for this long is given up (the guest runs here
 * again): the mesh to the new node is cut, and TCP would wait minutes, the guest's disk writes
 * (write-blocking) or the guest itself (paused before the switchover) waiting with it.
 */
export const MOVE_STALL_MS = 30_000;

/** What the source sent, as QEMU counted it. */
export interface LiveMoveFigures {
  /** The disk's bytes the mirror wrote to the target. */
  diskBytes: number;
  /** The migration's bytes (memory and device state). */
  memoryBytes: number;
  /** When (performance.now()) the guest was paused for the switchover. */
  pausedAtMs: number;
}

interface QmpJob {
  id: string;
  type?: string;
  status: string;
  'current-progress'?: number;
  'total-progress'?: number;
  error?: string;
}

interface QmpMigration {
  status?: string;
  'error-desc'?: string;
  ram?: { transferred?: number };
  disk?: { transferred?: number };
}

/** The machine type the running QEMU was started on, resolved (`q35` runs as `pc-q35-7.2`). */
export async function runningMachine(qmp: QmpSession): Promise<string> {
  const type = await qmp.execute('qom-get', { path: '/machine', property: 'type' });
  if (typeof type !== 'string' || !type.endsWith('-machine')) {
    throw new Error(`QEMU did not name its machine type (${String(type).slice(0, 60)})`);
  }
  return type.slice(0, -'-machine'.length);
}

/**
 * On the source: the disk mirrored into the target's NBD export (reached through the agent's
 * relay at `nbdSocket`), every guest write from the
 * start also written there before it completes (write-blocking), so once the job is ready the
 * two disks stay equal until the job ends. Resolves when it is ready.
 */
export async function mirrorToNbd(
  qmp: QmpSession,
  diskNode: string,
  nbdSocket: string,
  stallMs = MOVE_STALL_MS,
): Promise<void> {
  await qmp.execute('blockdev-add', {
    'node-name': MOVE_TARGET_NODE,
    driver: 'nbd',
    // The agent's relay to the target's export (see MoveRelay): QEMU connects to no address.
    server: { type: 'unix', path: nbdSocket },
    export: MOVE_EXPORT,
  });
  await qmp.execute('blockdev-mirror', {
    'job-id': MOVE_JOB_ID,
    device: diskNode,
    target: MOVE_TARGET_NODE,
    // The whole disk as the guest sees it (its base image's part too): the target has no base.
    sync: 'full',
    'copy-mode': 'write-blocking',
    'auto-dismiss': false,
  });
  const progress = new Progress(stallMs, "QEMU's mirror to the target");
  for (;;) {
    const job = await moveJob(qmp);
    if (!job) throw new Error("QEMU's mirror job is gone");
    if (job.status === 'ready') return;
    if (job.status === 'concluded' || job.status === 'aborting' || job.status === 'null') {
      throw new Error(`QEMU's mirror to the target failed: ${job.error ?? job.status}`);
    }
    progress.check(job['current-progress'] ?? 0);
    await pause(POLL_MS);
  }
}

/**
 * On the source, the mirror ready: the migration to the target (through the agent's relay at
 * `migrateSocket`), paused before its switchover (the
 * guest stopped, every byte of its memory but the last sent), the mirror ended there without
 * switching the source over to the target's disk (both equal, the guest stopped), then the
 * switchover. Resolves once QEMU says the migration completed; the source is then stopped for
 * good (postmigrate) and the target holds the guest, paused (started with -S).
 */
export async function migrateWithSwitchover(
  qmp: QmpSession,
  migrateSocket: string,
  paused: () => void = () => undefined,
  stallMs = MOVE_STALL_MS,
  /** Last, before the switchover (the mirror ended): throws to cancel the migration. */
  beforeSwitchover: () => Promise<void> = () => Promise.resolve(),
): Promise<LiveMoveFigures> {
  await qmp.execute('migrate-set-capabilities', {
    capabilities: [{ capability: 'pause-before-switchover', state: true }],
  });
  await qmp.execute('migrate-set-parameters', {
    'max-bandwidth': MIGRATE_BANDWIDTH_BYTES_S,
    'downtime-limit': DOWNTIME_LIMIT_MS,
  });
  await qmp.execute('migrate', { uri: `unix:${migrateSocket}` });
  await migrationReaches(qmp, 'pre-switchover', stallMs);
  const pausedAtMs = performance.now();
  paused();
  const mirror = await moveJob(qmp);
  const diskBytes = mirror?.['current-progress'] ?? 0;
  // A ready mirror cancelled completes it without pivoting: the source keeps its own disk.
  await qmp.execute('block-job-cancel', { device: MOVE_JOB_ID });
  const ending = new Progress(stallMs, "the mirror's last writes");
  for (;;) {
    const job = await moveJob(qmp);
    if (!job) break;
    ending.check(job['current-progress'] ?? 0);
    if (job.status === 'concluded') {
      await qmp.execute('job-dismiss', { id: MOVE_JOB_ID });
      if (job.error !== undefined) throw new Error(`QEMU's mirror ended badly: ${job.error}`);
      break;
    }
    await pause(POLL_MS / 10);
  }
  await qmp.execute('blockdev-del', { 'node-name': MOVE_TARGET_NODE });
  await beforeSwitchover();
  await qmp.execute('migrate-continue', { state: 'pre-switchover' });
  const done = await migrationReaches(qmp, 'completed', stallMs);
  return { diskBytes, memoryBytes: done.ram?.transferred ?? 0, pausedAtMs };
}

/**
 * On the source, before a move: what a move cut short left in QEMU (its agent killed midway,
 * which ends the relay and so the mirror and the migration): the job and the NBD node. The
 * guest ran on meanwhile (QEMU resumes it when its migration fails).
 */
export async function clearMoveLeftovers(qmp: QmpSession): Promise<void> {
  const job = await moveJob(qmp);
  if (job) {
    if (job.status !== 'concluded') {
      await qmp
        .execute('block-job-cancel', { device: MOVE_JOB_ID, force: true })
        .catch(() => undefined);
      for (let tries = 0; tries < 100; tries += 1) {
        const left = await moveJob(qmp);
        if (!left || left.status === 'concluded') break;
        await pause(POLL_MS);
      }
    }
    await qmp.execute('job-dismiss', { id: MOVE_JOB_ID }).catch(() => undefined);
  }
  const nodes = (await qmp.execute('query-named-block-nodes', { flat: true })) as Array<{
    'node-name'?: string;
  }>;
  if (nodes.some((node) => node['node-name'] === MOVE_TARGET_NODE)) {
    await qmp.execute('blockdev-del', { 'node-name': MOVE_TARGET_NODE });
  }
}

/**
 * On the source, after a move failed anywhere before the target took the guest: the migration
 * cancelled, the mirror and its NBD node gone, the guest running again. Each step is tried
 * whatever the one before did: what QEMU had not got to refuses and is skipped.
 * A migration that completed all the same (the cancel too late, a stall check or an error right
 * at its end) is left alone, the guest NOT resumed: the new node may hold it whole and take it
 * over; `completed` says so, and only the new node's word that it did not take it lets the
 * caller resume it here (`evenIfCompleted`, see settleTakeOver).
 */
export async function abandonOnSource(
  qmp: QmpSession,
  { evenIfCompleted = false }: { evenIfCompleted?: boolean } = {},
): Promise<'resumed' | 'completed'> {
  await qmp.execute('migrate_cancel').catch(() => undefined);
  for (let tries = 0; tries < 50; tries += 1) {
    const status = ((await qmp.execute('query-migrate').catch(() => ({}))) as QmpMigration).status;
    if (status === 'completed' && !evenIfCompleted) return 'completed';
    if (status !== 'cancelling' && status !== 'pre-switchover' && status !== 'device') break;
    await pause(POLL_MS);
  }
  const job = await moveJob(qmp).catch(() => undefined);
  if (job) {
    if (job.status !== 'concluded') {
      await qmp
        .execute('block-job-cancel', { device: MOVE_JOB_ID, force: true })
        .catch(() => undefined);
      for (let tries = 0; tries < 100; tries += 1) {
        const left = await moveJob(qmp).catch(() => undefined);
        if (!left || left.status === 'concluded') break;
        await pause(POLL_MS);
      }
    }
    await qmp.execute('job-dismiss', { id: MOVE_JOB_ID }).catch(() => undefined);
  }
  await qmp.execute('blockdev-del', { 'node-name': MOVE_TARGET_NODE }).catch(() => undefined);
  const status = (await qmp.execute('query-status')) as { status?: string; running?: boolean };
  if (!status.running) await qmp.execute('cont');
  return 'resumed';
}

/**
 * On the target, its QEMU started with `-incoming defer -S`: its blank disk exported over NBD
 * (writable, for the mirror) and the migration awaited, both on `host` (the node's mesh
 * address), each on its port.
 */
export async function awaitIncoming(
  qmp: QmpSession,
  diskNode: string,
  host: string,
  nbdPort: number,
  migratePort: number,
): Promise<void> {
  await qmp.execute('nbd-server-start', {
    addr: { type: 'inet', data: { host, port: String(nbdPort) } },
  });
  await qmp.execute('block-export-add', {
    type: 'nbd',
    id: MOVE_EXPORT,
    'node-name': diskNode,
    name: MOVE_EXPORT,
    writable: true,
  });
  await qmp.execute('migrate-incoming', { uri: `tcp:${uriHost(host)}:${migratePort}` });
}

/**
 * On the target, once the source says its migration completed: QEMU agrees (the guest whole
 * here, paused), the NBD server ends, and the guest runs. Throws, leaving the guest paused,
 * when QEMU has not received it all.
 */
export async function takeOver(qmp: QmpSession, withinMs: number): Promise<void> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    const migration = (await qmp.execute('query-migrate')) as QmpMigration;
    if (migration.status === 'completed') break;
    if (migration.status === 'failed' || migration.status === 'cancelled') {
      throw new Error(
        `the incoming migration ${migration.status}: ${migration['error-desc'] ?? ''}`,
      );
    }
    if (performance.now() > deadline) {
      throw new Error(`the incoming migration is still ${migration.status ?? 'not started'}`);
    }
    await pause(POLL_MS / 10);
  }
  await qmp.execute('nbd-server-stop');
  await qmp.execute('cont');
}

/**
 * On the target: whether its QEMU received the whole guest (its incoming migration completed).
 * From then on the guest is this node's: its old node, having sent it all, never resumes it
 * unless this node says it did not take it (see settleTakeOver).
 */
export async function incomingCompleted(qmp: QmpSession): Promise<boolean> {
  const migration = (await qmp.execute('query-migrate')) as QmpMigration;
  return migration.status === 'completed';
}

async function migrationReaches(
  qmp: QmpSession,
  wanted: string,
  stallMs: number,
): Promise<QmpMigration> {
  const progress = new Progress(stallMs, 'the migration');
  for (;;) {
    const migration = (await qmp.execute('query-migrate')) as QmpMigration;
    if (migration.status === wanted) return migration;
    if (migration.status === 'failed' || migration.status === 'cancelled') {
      throw new Error(
        `the migration ${migration.status}${migration['error-desc'] ? `: ${migration['error-desc']}` : ''}`,
      );
    }
    progress.check(migration.ram?.transferred ?? 0);
    await pause(wanted === 'completed' ? POLL_MS / 10 : POLL_MS);
  }
}

/** A count that must grow within `stallMs`: else `what` is given up (MOVE_STALL_MS). */
class Progress {
  private last = -1;
  private sinceMs = performance.now();

  constructor(
    private readonly stallMs: number,
    private readonly what: string,
  ) {}

  check(count: number): void {
    const now = performance.now();
    if (count !== this.last) {
      this.last = count;
      this.sinceMs = now;
    } else if (now - this.sinceMs > this.stallMs) {
      throw new Error(
        `${this.what} sent nothing for ${Math.round(this.stallMs / 1000)} s (the new node unreachable?)`,
      );
    }
  }
}

async function moveJob(qmp: QmpSession): Promise<QmpJob | undefined> {
  const jobs = (await qmp.execute('query-jobs')) as QmpJob[];
  return (Array.isArray(jobs) ? jobs : []).find(({ id }) => id === MOVE_JOB_ID);
}

function uriHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
