import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QmpCommand, qmpServer } from '../../../../../test/support/fake-qmp-server';
import { vmHostConfig } from '../../../../../test/support/configs';
import { VmFiles } from '../files/vm-files';
import { CrashFailpoint } from '../failpoints/crash-failpoint';
import { withQmp } from '../qemu/qmp.client';
import { QemuCopier } from './qemu-copier';
import {
  COPY_JOB_ID,
  COPY_TARGET_NODE,
  clearLeftovers,
  diskNode,
  fullCopy,
  incrementalCopy,
  whyFull,
} from './qmp-copy';

const DISK = '/var/lib/vm-fleet/disks/vm-0123456789abcdef.qcow2';
const TARGET = '/mnt/backups/vm-0123456789abcdef/chain/0001.partial.qcow2';

interface FakeJob {
  id: string;
  status: string;
  error?: string;
}

/**
 * QEMU's block layer as the copies see it: the VM's disk (and its seed ISO), its bitmaps, the
 * nodes added, one job that concludes on the next query (with `jobError` if set).
 */
class FakeQemu {
  constructor(private readonly disk = DISK) {}

  bitmaps: Array<{ name: string; inconsistent?: boolean }> = [];
  nodes = new Set<string>();
  jobs: FakeJob[] = [];
  jobError?: string;
  /** A command QEMU refuses, with its description. */
  refuse?: { command: string; desc: string };

  answer = (command: QmpCommand): object => {
    const args = command.arguments ?? {};
    if (this.refuse?.command === command.execute) {
      return { error: { class: 'GenericError', desc: this.refuse.desc } };
    }
    switch (command.execute) {
      case 'query-block':
        return {
          return: [
            {
              device: 'virtio0',
              inserted: {
                'node-name': '#block149',
                image: { filename: this.disk, 'virtual-size': 4294967296 },
                'dirty-bitmaps': this.bitmaps,
              },
            },
            {
              device: 'virtio1',
              inserted: {
                'node-name': '#block361',
                image: {
                  filename: '/var/lib/vm-fleet/run/vm-0123456789abcdef/seed.iso',
                  'virtual-size': 1,
                },
              },
            },
          ],
        };
      case 'query-named-block-nodes':
        return { return: [...this.nodes].map((name) => ({ 'node-name': name })) };
      case 'query-jobs': {
        const jobs = this.jobs.map((job) => ({ ...job }));
        // Concluded from the next query on.
        for (const job of this.jobs) {
          job.status = 'concluded';
          if (this.jobError !== undefined) job.error = this.jobError;
        }
        return { return: jobs };
      }
      case 'blockdev-add':
        this.nodes.add(args['node-name'] as string);
        return { return: {} };
      case 'blockdev-del':
        this.nodes.delete(args['node-name'] as string);
        return { return: {} };
      case 'transaction':
      case 'blockdev-backup':
        this.jobs.push({ id: COPY_JOB_ID, status: 'running' });
        return { return: {} };
      case 'job-dismiss':
        this.jobs = this.jobs.filter(({ id }) => id !== args.id);
        return { return: {} };
      case 'block-dirty-bitmap-remove':
        this.bitmaps = this.bitmaps.filter(({ name }) => name !== args.name);
        return { return: {} };
      default:
        return { return: {} };
    }
  };
}

describe('the QMP sequences of a copy', () => {
  let root: string;
  let socketPath: string;
  let server: Server | undefined;
  let qemu: FakeQemu;
  let calls: QmpCommand[];

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'qmp-copy-'));
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
  /** What was sent after the capabilities, each command with its arguments. */
  const sent = (): QmpCommand[] => calls.filter(({ execute }) => execute !== 'qmp_capabilities');

  it("finds the disk's format node by its file, with its size and bitmaps", async () => {
    qemu.bitmaps = [{ name: 'ppn-copy-a' }];
    const disk = await session((qmp) => diskNode(qmp, DISK));
    expect(disk).toEqual({
      node: '#block149',
      virtualSize: 4294967296,
      bitmaps: [{ name: 'ppn-copy-a' }],
    });
    await expect(session((qmp) => diskNode(qmp, '/elsewhere.qcow2'))).rejects.toThrow(
      'QEMU has no disk /elsewhere.qcow2 open',
    );
  });

  it('says a copy must be full without a chain, its bitmap, or with it inconsistent (QEMU killed)', () => {
    const disk = (bitmaps: Array<{ name: string; inconsistent?: boolean }>) => ({
      node: '#block149',
      virtualSize: 1,
      bitmaps,
    });
    expect(whyFull(disk([{ name: 'ppn-copy-a' }]), null)).toBe('no chain to add to');
    expect(whyFull(disk([{ name: 'ppn-copy-b' }]), 'ppn-copy-a')).toMatch(/no bitmap ppn-copy-a/);
    expect(whyFull(disk([{ name: 'ppn-copy-a', inconsistent: true }]), 'ppn-copy-a')).toMatch(
      /inconsistent/,
    );
    expect(whyFull(disk([{ name: 'ppn-copy-a' }]), 'ppn-copy-a')).toBeNull();
  });

  it("copies full with the chain's persistent bitmap added in the same transaction, the older ones removed", async () => {
    qemu.bitmaps = [{ name: 'ppn-copy-old' }, { name: 'someone-elses' }];
    await session(async (qmp) => fullCopy(qmp, await diskNode(qmp, DISK), TARGET, 'ppn-copy-new'));
    const commands = sent();
    expect(commands.map(({ execute }) => execute)).toEqual([
      'query-block',
      'block-dirty-bitmap-remove',
      'blockdev-add',
      'transaction',
      'query-jobs',
      'query-jobs',
      'job-dismiss',
      'blockdev-del',
    ]);
    expect(commands[1].arguments).toEqual({ node: '#block149', name: 'ppn-copy-old' });
    expect(commands[2].arguments).toEqual({
      'node-name': COPY_TARGET_NODE,
      driver: 'qcow2',
      file: { driver: 'file', filename: TARGET },
      backing: null,
    });
    expect(commands[3].arguments).toEqual({
      actions: [
        {
          type: 'block-dirty-bitmap-add',
          data: { node: '#block149', name: 'ppn-copy-new', persistent: true },
        },
        {
          type: 'blockdev-backup',
          data: {
            'job-id': COPY_JOB_ID,
            device: '#block149',
            target: COPY_TARGET_NODE,
            sync: 'full',
            'auto-dismiss': false,
          },
        },
      ],
    });
    expect(qemu.nodes.size).toBe(0);
    expect(qemu.jobs).toEqual([]);
    expect(qemu.bitmaps).toEqual([{ name: 'someone-elses' }]);
  });

  it('copies the changes the bitmap marks, incrementally', async () => {
    qemu.bitmaps = [{ name: 'ppn-copy-a' }];
    await session(async (qmp) =>
      incrementalCopy(qmp, await diskNode(qmp, DISK), TARGET, 'ppn-copy-a'),
    );
    const backup = sent().find(({ execute }) => execute === 'blockdev-backup');
    expect(backup?.arguments).toEqual({
      'job-id': COPY_JOB_ID,
      device: '#block149',
      target: COPY_TARGET_NODE,
      sync: 'incremental',
      bitmap: 'ppn-copy-a',
      'auto-dismiss': false,
    });
    expect(qemu.nodes.size).toBe(0);
  });

  it("fails with QEMU's job error, its job dismissed and its target detached", async () => {
    qemu.bitmaps = [{ name: 'ppn-copy-a' }];
    qemu.jobError = 'No space left on device';
    await expect(
      session(async (qmp) => incrementalCopy(qmp, await diskNode(qmp, DISK), TARGET, 'ppn-copy-a')),
    ).rejects.toThrow("QEMU's copy job failed: No space left on device");
    expect(qemu.jobs).toEqual([]);
    expect(qemu.nodes.size).toBe(0);
  });

  it('detaches the target when QEMU refuses the job', async () => {
    qemu.refuse = { command: 'blockdev-backup', desc: "Bitmap 'ppn-copy-a' is inconsistent" };
    await expect(
      session(async (qmp) => incrementalCopy(qmp, await diskNode(qmp, DISK), TARGET, 'ppn-copy-a')),
    ).rejects.toThrow("QMP blockdev-backup: Bitmap 'ppn-copy-a' is inconsistent");
    expect(qemu.nodes.size).toBe(0);
  });

  it('clears what a copy cut short left (its job cancelled and dismissed, its target detached)', async () => {
    qemu.jobs = [{ id: COPY_JOB_ID, status: 'running' }];
    qemu.nodes.add(COPY_TARGET_NODE);
    expect(await session(clearLeftovers)).toBe(true);
    expect(sent().map(({ execute }) => execute)).toEqual([
      'query-jobs',
      'job-cancel',
      'query-jobs',
      'job-dismiss',
      'query-named-block-nodes',
      'blockdev-del',
    ]);
    expect(qemu.jobs).toEqual([]);
    expect(qemu.nodes.size).toBe(0);
  });

  it('changes nothing when no copy was cut short', async () => {
    qemu.nodes.add('#block149');
    expect(await session(clearLeftovers)).toBe(false);
    expect(sent().map(({ execute }) => execute)).toEqual(['query-jobs', 'query-named-block-nodes']);
  });
});

describe('QemuCopier before a copy of a running VM', () => {
  const VM = 'vm-0123456789abcdef';
  let root: string;
  let copier: QemuCopier;
  let files: VmFiles;
  let server: Server | undefined;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'qemu-copier-'));
    const config = vmHostConfig({ VM_DISK_DIR: root });
    files = new VmFiles(config);
    await files.prepare();
    await mkdir(files.runDir(VM));
    copier = new QemuCopier(files, new CrashFailpoint(config));
  });

  afterEach(async () => {
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
    await rm(root, { recursive: true, force: true });
  });

  it('refuses a VM whose QEMU was started before copies (no copy socket), asking nothing of it', async () => {
    await expect(copier.prepareRunning(VM, 'ppn-copy-a')).rejects.toThrow(
      `vm ${VM} runs in a QEMU started before copies (it has no copy socket); it is backed up once stopped or restarted`,
    );
  });

  it('asks over the copy socket, and wants a full copy after a job cut short even with its bitmap there', async () => {
    const qemu = new FakeQemu(files.disk(VM));
    qemu.bitmaps = [{ name: 'ppn-copy-a' }];
    ({ server } = await qmpServer(join(files.runDir(VM), 'qmp-copy'), qemu.answer));
    expect(await copier.prepareRunning(VM, 'ppn-copy-a')).toBeNull();
    qemu.jobs = [{ id: COPY_JOB_ID, status: 'concluded' }];
    expect(await copier.prepareRunning(VM, 'ppn-copy-a')).toBe('the last copy was cut short');
    expect(qemu.jobs).toEqual([]);
  });
});
