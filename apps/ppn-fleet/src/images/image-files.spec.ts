import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../run-cli';
import { CliIo } from '../terminal/cli-io';
import { INSTALLED_IMAGE_BUILDER, imageBuilderPath, nodeImages } from './image-files';

const CHECKOUT = join(__dirname, '../../../..');

/** ppn-fleet run in-process, its output collected. */
async function ppnFleet(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = Object.assign(Object.create(CliIo.prototype) as CliIo, {
    env: {},
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    fetch: () => Promise.reject(new Error('no request expected')),
    sleep: () => Promise.resolve(),
    now: () => 0,
  });
  const code = await runCli(args, io);
  return { code, stdout, stderr };
}

function qemuImg(...args: string[]): void {
  execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', ...args]);
}

describe('ppn-fleet image', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'image-list-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("finds the checkout's builder from a checkout, the packaged one elsewhere", () => {
    expect(imageBuilderPath(__dirname)).toBe(join(CHECKOUT, 'deploy/images/build-debian-image.sh'));
    expect(imageBuilderPath('/usr/lib/service-vm-fleet/apps/ppn-fleet/src')).toBe(
      INSTALLED_IMAGE_BUILDER,
    );
  });

  it("lists a node's images with the VMs whose disks (kept deleted ones too) name each", async () => {
    const images = join(dir, 'images');
    mkdirSync(images);
    mkdirSync(join(dir, 'disks'));
    mkdirSync(join(dir, 'deleted'));
    const [old, current, gone] = ['old', 'current', 'gone'].map((name) =>
      join(images, `debian-${name}.qcow2`),
    );
    for (const image of [old, current, gone]) qemuImg(image, '16M');
    writeFileSync(join(images, 'notes.txt'), 'not an image');
    qemuImg('-F', 'qcow2', '-b', current, join(dir, 'disks', 'vm-a.qcow2'));
    qemuImg('-F', 'qcow2', '-b', current, join(dir, 'disks', 'vm-b.qcow2'));
    qemuImg('-F', 'qcow2', '-b', gone, join(dir, 'deleted', '1700000000000.vm-c.qcow2'));
    rmSync(gone);

    const listed = await nodeImages(images, dir);
    expect(
      listed.map(({ path, sizeBytes, disks }) => ({ path, known: !!sizeBytes, disks })),
    ).toEqual([
      {
        path: current,
        known: true,
        disks: [
          { vmId: 'vm-a', deleted: false, backing: current },
          { vmId: 'vm-b', deleted: false, backing: current },
        ],
      },
      { path: gone, known: false, disks: [{ vmId: 'vm-c', deleted: true, backing: gone }] },
      { path: old, known: true, disks: [] },
    ]);

    const run = await ppnFleet(['image', 'list', '--images', images, '--disks', dir]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^IMAGE +SIZE +WRITTEN +USED BY$/);
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(/debian-current\.qcow2 .* vm-a, vm-b$/),
      expect.stringMatching(/debian-gone\.qcow2 +missing +- +vm-c \(deleted, kept\)$/),
      expect.stringMatching(/debian-old\.qcow2 .* nothing \(can be deleted\)$/),
    ]);
  });

  it('says so for a node without images or disks', async () => {
    const run = await ppnFleet(['image', 'list', '--images', dir, '--disks', dir]);
    expect(run).toEqual({
      code: 0,
      stdout: `no image in ${dir}, none named by a disk\n`,
      stderr: '',
    });
  });

  it('needs a command', async () => {
    const run = await ppnFleet(['image']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      'ppn-fleet: image needs a command: build or list (see ppn-fleet image --help)\n',
    );
  });
});
