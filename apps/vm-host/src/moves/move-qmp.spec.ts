import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QmpCommand, qmpServer } from '../../../../test/support/fake-qmp-server';
import { withQmp } from '../vms/qemu/qmp.client';
import {
  MOVE_EXPORT,
  MOVE_JOB_ID,
  MOVE_TARGET_NODE,
  abandonOnSource,
  clearMoveLeftovers,
  awaitIncoming,
  incomingCompleted,
  migrateWithSwitchover,
  mirrorToNbd,
  runningMachine,
  takeOver,
} from './move-qmp';

/**
 * QEMU as a move sees it: a mirror job that is ready after one query, a migration that reaches
 * its pause before the switchover, then completes once continued (or fails with `failWith`).
 */
class FakeQemu {
  job?: { id: string; status: string; 'current-progress': number; error?: string };
  migration = 'none';
  nodes = new Set<string>();
  running = true;
  failWith?: string;
  /** A mirror that never gets ready, its progress frozen (the mesh cut). */
  stalled = false;
  /** What the migration reaches after `migrate`: its pause, unless the test says otherwise. */
  afterMigrate = 'pre-switchover';

  answer = (command: QmpCommand): object => {
    const args = command.arguments ?? {};
    switch (command.execute) {
      case 'qom-get':
        return { return: 'pc-q35-7.2-machine' };
      case 'blockdev-mirror':
        this.job = { id: MOVE_JOB_ID, status: 'running', 'current-progress': 1 << 20 };
        return { return: {} };
      case 'query-jobs': {
        const jobs = this.job ? [{ ...this.job }] : [];
        if (this.job?.status === 'running' && !this.stalled) {
          this.job.status = 'ready';
          this.job['current-progress'] = 64 << 20;
        }
        return { return: jobs };
      }
      case 'block-job-cancel':
        if (this.job) this.job.status = 'concluded';
        return { return: {} };
      case 'job-dismiss':
        this.job = undefined;
        return { return: {} };
      case 'migrate':
        this.migration = this.afterMigrate;
        this.running = false;
        return { return: {} };
      case 'migrate-continue':
        if (args.state !== 'pre-switchover') return { error: { desc: 'bad state' } };
        this.migration = 'completed';
        return { return: {} };
      case 'migrate_cancel':
        // QEMU ignores a cancel once the migration completed.
        if (this.migration !== 'completed') this.migration = 'cancelled';
        return { return: {} };
      case 'query-migrate':
        return {
          return:
            this.migration === 'none'
              ? {}
              : {
                  status: this.failWith ? 'failed' : this.migration,
                  ...(this.failWith ? { 'error-desc': this.failWith } : {}),
                  ram: { transferred: 530_000_000 },
                },
        };
      case 'query-named-block-nodes':
        return { return: [...this.nodes].map((name) => ({ 'node-name': name })) };
      case 'blockdev-add':
        this.nodes.add(args['node-name'] as string);
        return { return: {} };
      case 'blockdev-del':
        this.nodes.delete(args['node-name'] as string);
        return { return: {} };
      case 'query-status':
        return { return: { status: this.running ? 'running' : 'paused', running: this.running } };
      case 'cont':
        this.running = true;
        return { return: {} };
      default:
        return { return: {} };
    }
  };
}

describe("the QMP sequences of a VM's move", () => {
  let root: string;
  let socketPath: string;
  let server: Server | undefined;
  let qemu: FakeQemu;
  let calls: QmpCommand[];

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'move-qmp-'));
    socketPath = join(root, 'qmp-copy');
    qemu = new FakeQemu();
    ({ server, calls } = await qmpServer(socketPath, (command) => qemu.answer(command)));
  });

  afterEach(async () => {
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
    await rm(root, { recursive: true, force: true });
  });

  const session = <T>(work: Parameters<typeof withQmp<T>>[2]): Promise<T> =>
    withQmp(socketPath, 2_000, work);
  const sent = (): string[] =>
    calls
      .map(({ execute }) => execute)
      .filter((name) => !['qmp_capabilities', 'query-jobs', 'query-migrate'].includes(name));
  const call = (name: string): QmpCommand | undefined =>
    calls.find(({ execute }) => execute === name);

  it('names the machine type QEMU resolved (q35 runs as pc-q35-7.2)', async () => {
    await expect(session((qmp) => runningMachine(qmp))).resolves.toBe('pc-q35-7.2');
  });

  it('mirrors the whole disk to the NBD export, write-blocking, until the job is ready', async () => {
    await session((qmp) => mirrorToNbd(qmp, '#block149', '/run/vm/move-nbd'));
    expect(call('blockdev-add')?.arguments).toEqual({
      'node-name': MOVE_TARGET_NODE,
      driver: 'nbd',
      server: { type: 'unix', path: '/run/vm/move-nbd' },
      export: MOVE_EXPORT,
    });
    expect(call('blockdev-mirror')?.arguments).toMatchObject({
      'job-id': MOVE_JOB_ID,
      device: '#block149',
      target: MOVE_TARGET_NODE,
      sync: 'full',
      'copy-mode': 'write-blocking',
    });
  });

  it('ends the mirror only once the guest is paused before the switchover, then switches over', async () => {
    await session((qmp) => mirrorToNbd(qmp, '#block149', '/run/vm/move-nbd'));
    calls.length = 0;
    let pausedAt: string[] = [];
    const figures = await session((qmp) =>
      migrateWithSwitchover(qmp, '/run/vm/move-mig', () => (pausedAt = sent())),
    );
    expect(call('migrate-set-capabilities')?.arguments).toEqual({
      capabilities: [{ capability: 'pause-before-switchover', state: true }],
    });
    expect(call('migrate')?.arguments).toEqual({ uri: 'unix:/run/vm/move-mig' });
    // Nothing of the mirror is touched before the pause.
    expect(pausedAt).toEqual(['migrate-set-capabilities', 'migrate-set-parameters', 'migrate']);
    expect(sent()).toEqual([
      'migrate-set-capabilities',
      'migrate-set-parameters',
      'migrate',
      'block-job-cancel',
      'job-dismiss',
      'blockdev-del',
      'migrate-continue',
    ]);
    expect(figures).toMatchObject({ diskBytes: 64 << 20, memoryBytes: 530_000_000 });
  });

  it("never switches over when the new node's agent does not say it awaits the guest", async () => {
    await session((qmp) => mirrorToNbd(qmp, '#block149', '/run/vm/move-nbd'));
    calls.length = 0;
    await expect(
      session((qmp) =>
        migrateWithSwitchover(qmp, '/run/vm/move-mig', undefined, undefined, () =>
          Promise.reject(new Error('node node-b does not say it awaits the guest')),
        ),
      ),
    ).rejects.toThrow('node node-b does not say it awaits the guest');
    // Asked last, the mirror ended (both disks equal, the guest paused): no switchover.
    expect(sent()).toEqual([
      'migrate-set-capabilities',
      'migrate-set-parameters',
      'migrate',
      'block-job-cancel',
      'job-dismiss',
      'blockdev-del',
    ]);
  });

  it('says why a migration failed, and never switches over', async () => {
    await session((qmp) => mirrorToNbd(qmp, '#block149', '/run/vm/move-nbd'));
    qemu.failWith = 'Unable to write to socket: Connection reset by peer';
    await expect(session((qmp) => migrateWithSwitchover(qmp, '/run/vm/move-mig'))).rejects.toThrow(
      'the migration failed: Unable to write to socket: Connection reset by peer',
    );
    expect(call('migrate-continue')).toBeUndefined();
  });

  it('after a failure, cancels the migration and the mirror and runs the guest again', async () => {
    await session((qmp) => mirrorToNbd(qmp, '#block149', '/run/vm/move-nbd'));
    qemu.migration = 'pre-switchover';
    qemu.running = false;
    calls.length = 0;
    await session((qmp) => abandonOnSource(qmp));
    expect(sent()).toEqual([
      'migrate_cancel',
      'block-job-cancel',
      'job-dismiss',
      'blockdev-del',
      'query-status',
      'cont',
    ]);
    expect(qemu.running).toBe(true);
  });

  it('never resumes the guest when its migration completed all the same (the cancel too late)', async () => {
    qemu.migration = 'completed';
    qemu.running = false;
    await expect(session((qmp) => abandonOnSource(qmp))).resolves.toBe('completed');
    expect(call('cont')).toBeUndefined();
    expect(qemu.running).toBe(false);
    // The new node said it did not take the guest: only then does it run here again.
    await expect(session((qmp) => abandonOnSource(qmp, { evenIfCompleted: true }))).resolves.toBe(
      'resumed',
    );
    expect(qemu.running).toBe(true);
  });

  it('clears what a move cut short left (its job, its NBD node) before the next, and nothing else', async () => {
    await session((qmp) => clearMoveLeftovers(qmp));
    expect(sent()).toEqual(['query-named-block-nodes']);
    await session((qmp) => mirrorToNbd(qmp, '#block149', '/run/vm/move-nbd'));
    calls.length = 0;
    await session((qmp) => clearMoveLeftovers(qmp));
    expect(sent()).toEqual([
      'block-job-cancel',
      'job-dismiss',
      'query-named-block-nodes',
      'blockdev-del',
    ]);
  });

  it('on the target: exports the blank disk and awaits the migration on the mesh address', async () => {
    await session((qmp) => awaitIncoming(qmp, '#block7', '10.0.0.2', 40123, 40124));
    expect(sent()).toEqual(['nbd-server-start', 'block-export-add', 'migrate-incoming']);
    expect(call('nbd-server-start')?.arguments).toEqual({
      addr: { type: 'inet', data: { host: '10.0.0.2', port: '40123' } },
    });
    expect(call('block-export-add')?.arguments).toEqual({
      type: 'nbd',
      id: MOVE_EXPORT,
      'node-name': '#block7',
      name: MOVE_EXPORT,
      writable: true,
    });
    expect(call('migrate-incoming')?.arguments).toEqual({ uri: 'tcp:10.0.0.2:40124' });
  });

  it('on the target: runs the guest only once its migration completed', async () => {
    qemu.migration = 'completed';
    qemu.running = false;
    await session((qmp) => takeOver(qmp, 1_000));
    expect(sent()).toEqual(['nbd-server-stop', 'cont']);

    calls.length = 0;
    qemu.migration = 'active';
    qemu.running = false;
    await expect(session((qmp) => takeOver(qmp, 50))).rejects.toThrow(
      'the incoming migration is still active',
    );
    expect(call('cont')).toBeUndefined();
  });

  it('gives a mirror up once it sends nothing for the stall limit (the mesh cut)', async () => {
    qemu.stalled = true;
    await expect(
      session((qmp) => mirrorToNbd(qmp, '#block149', '/run/vm/move-nbd', 300)),
    ).rejects.toThrow(
      "QEMU's mirror to the target sent nothing for 0 s (the new node unreachable?)",
    );
  });

  it('gives a migration up once it sends nothing for the stall limit, never switching over', async () => {
    await session((qmp) => mirrorToNbd(qmp, '#block149', '/run/vm/move-nbd'));
    qemu.afterMigrate = 'active';
    await expect(
      session((qmp) => migrateWithSwitchover(qmp, '/run/vm/move-mig', undefined, 300)),
    ).rejects.toThrow('the migration sent nothing for 0 s');
    expect(call('migrate-continue')).toBeUndefined();
  });

  it('on the target: says whether the whole guest was received', async () => {
    qemu.migration = 'active';
    await expect(session((qmp) => incomingCompleted(qmp))).resolves.toBe(false);
    qemu.migration = 'completed';
    await expect(session((qmp) => incomingCompleted(qmp))).resolves.toBe(true);
  });
});
