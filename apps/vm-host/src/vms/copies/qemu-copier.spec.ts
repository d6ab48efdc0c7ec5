import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { vmHostConfig } from '../../../../../test/support/configs';
import { VmFiles } from '../files/vm-files';
import { CrashFailpoint } from '../failpoints/crash-failpoint';
import type { CopyShutdown } from './copy-shutdown';
import { QemuCopier, headerProblem } from './qemu-copier';

/**
 * A chain file's header is the sender's: the agent checks it names no file but the chain's
 * previous one before qemu-img opens its chain (a peer's copy, a backup folder carried over).
 */
describe('QemuCopier.check: a chain file names nothing but its chain', () => {
  let root: string;
  let copier: QemuCopier;
  const img = (...args: string[]) => execFileSync('qemu-img', args, { stdio: 'pipe' });

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'qemu-copier-check-'));
    const config = vmHostConfig({ VM_DISK_DIR: join(root, 'disks') });
    copier = new QemuCopier(new VmFiles(config), new CrashFailpoint(config));
    img('create', '-q', '-f', 'qcow2', join(root, '0000-full.qcow2'), '1M');
    img(
      'create',
      '-q',
      '-f',
      'qcow2',
      '-b',
      '0000-full.qcow2',
      '-F',
      'qcow2',
      join(root, '0001-incremental.qcow2'),
    );
  });

  afterEach(() => rm(root, { recursive: true, force: true }));

  it("takes a full file without backing and an incremental backed by the chain's previous file", async () => {
    await copier.check(join(root, '0000-full.qcow2'), null);
    await copier.check(join(root, '0001-incremental.qcow2'), '0000-full.qcow2');
  });

  it('refuses a header naming another file, a raw file, a full file with a backing, a data file, a link', async () => {
    const secret = join(root, 'secret.raw');
    await writeFile(secret, 'the other VM');
    const stolen = join(root, '0001-incremental.partial.qcow2');
    img('create', '-q', '-f', 'qcow2', '-u', '-b', secret, '-F', 'raw', stolen, '1M');
    await expect(copier.check(stolen, '0000-full.qcow2')).rejects.toThrow(
      "its backing is not 0000-full.qcow2, the chain's previous file",
    );
    await expect(copier.check(stolen, null)).rejects.toThrow('a full copy names a backing file');
    const relative = join(root, 'relative.qcow2');
    img(
      'create',
      '-q',
      '-f',
      'qcow2',
      '-u',
      '-b',
      '../disks/vm-x.qcow2',
      '-F',
      'qcow2',
      relative,
      '1M',
    );
    await expect(copier.check(relative, '0000-full.qcow2')).rejects.toThrow('its backing is not');
    const asRaw = join(root, 'as-raw.qcow2');
    img('create', '-q', '-f', 'qcow2', '-u', '-b', '0000-full.qcow2', '-F', 'raw', asRaw, '1M');
    await expect(copier.check(asRaw, '0000-full.qcow2')).rejects.toThrow('not read as qcow2');
    const external = join(root, 'external.qcow2');
    img('create', '-q', '-f', 'qcow2', '-o', `data_file=${secret}`, external, '1M');
    await expect(copier.check(external, null)).rejects.toThrow('external data file');
    const link = join(root, 'link.qcow2');
    await symlink(join(root, '0000-full.qcow2'), link);
    await expect(copier.check(link, null)).rejects.toThrow('is a symbolic link');
  });

  it('judges headers as qemu-img reports them', () => {
    expect(headerProblem({}, null)).toBeNull();
    expect(headerProblem({ 'full-backing-filename': '/etc/shadow' }, null)).toBe(
      'a full copy names a backing file',
    );
    expect(
      headerProblem(
        { 'backing-filename': '0000-full.qcow2', 'backing-filename-format': 'qcow2' },
        '0000-full.qcow2',
      ),
    ).toBeNull();
  });
});

/**
 * The agent stopping ends the copies it sends, never qemu-img's writes to a VM's own disk: its
 * bitmaps' metadata cut midway could damage the disk.
 */
describe("QemuCopier.copyStopped: the agent's stop never cuts a change to the VM's disk", () => {
  let root: string;
  const img = (...args: string[]) => execFileSync('qemu-img', args, { stdio: 'pipe' });

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'qemu-copier-stop-'));
  });

  afterEach(() => rm(root, { recursive: true, force: true }));

  it('adds the chain bitmap to the disk even when the stop comes once the copy is made', async () => {
    const config = vmHostConfig({ VM_DISK_DIR: join(root, 'disks') });
    const files = new VmFiles(config);
    const vmId = 'vm-0123456789abcdef';
    const disk = files.disk(vmId);
    await mkdir(dirname(disk), { recursive: true });
    img('create', '-q', '-f', 'qcow2', disk, '1M');
    img('bitmap', '--add', disk, 'ppn-copy-old');
    // The stop arrives once the copy itself ran (its qemu-img given a live signal).
    const stopped = new AbortController();
    stopped.abort(new Error('the agent is stopping'));
    let asked = 0;
    const shutdown = {
      get signal() {
        asked += 1;
        return asked === 1 ? new AbortController().signal : stopped.signal;
      },
    } as CopyShutdown;
    const copier = new QemuCopier(files, new CrashFailpoint(config), shutdown);
    await copier.copyStopped(vmId, join(root, '0000-full.qcow2'), 'ppn-copy-new');
    const info = JSON.parse(img('info', '--output=json', disk).toString()) as {
      'format-specific': { data: { bitmaps?: Array<{ name: string }> } };
    };
    expect(info['format-specific'].data.bitmaps?.map(({ name }) => name)).toContain('ppn-copy-new');
  });
});
