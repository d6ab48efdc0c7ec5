import { spawn } from 'node:child_process';
import { Command, CommandRunner, Option, SubCommand } from 'nest-commander';
import { CliFailure, ExitCode } from '../api/exit-codes';
import { CliIo } from '../terminal/cli-io';
import { printable } from '../terminal/printable';
import { formatTable } from '../terminal/table';
import { Terminal } from '../terminal/terminal';
import {
  DEFAULT_DISK_DIR,
  DEFAULT_IMAGES_DIR,
  NodeImage,
  imageBuilderPath,
  nodeImages,
} from './image-files';

interface ImageBuildOptions {
  out?: string;
  group?: string;
  owner?: string;
  suite?: string;
  mirror?: string;
  include?: string;
  size?: string;
  force?: boolean;
}

/** The builder's options, passed on as given: the builder checks each value. */
const BUILDER_OPTIONS = ['out', 'group', 'owner', 'suite', 'mirror', 'include', 'size'] as const;

@SubCommand({
  name: 'build',
  description:
    "build a Debian base image for the agents' VM_BASE_IMAGE (as root; needs mmdebstrap, extlinux, syslinux-common, fdisk, qemu-utils and Debian's mirror)",
})
export class ImageBuildCommand extends CommandRunner {
  constructor(private readonly io: CliIo) {
    super();
  }

  @Option({
    flags: '--out <file>',
    description: `the image to write (default ${DEFAULT_IMAGES_DIR}/debian-<suite>-<UTC time>.qcow2; never an existing file without --force)`,
  })
  parseOut(value: string): string {
    return value;
  }

  @Option({
    flags: '--group <group>',
    description:
      'its group (name or numeric gid, e.g. of vm-host on the nodes), mode 0640; default root only, 0600',
  })
  parseGroup(value: string): string {
    return value;
  }

  @Option({ flags: '--owner <user>', description: 'its owner (default root)' })
  parseOwner(value: string): string {
    return value;
  }

  @Option({ flags: '--suite <suite>', description: 'the Debian suite (default bookworm)' })
  parseSuite(value: string): string {
    return value;
  }

  @Option({ flags: '--mirror <url>', description: "Debian's archive (default deb.debian.org)" })
  parseMirror(value: string): string {
    return value;
  }

  @Option({ flags: '--include <packages>', description: 'more packages, comma-separated' })
  parseInclude(value: string): string {
    return value;
  }

  @Option({ flags: '--size <size>', description: "the guests' disk size (default 4G)" })
  parseSize(value: string): string {
    return value;
  }

  @Option({
    flags: '--force',
    description: 'replace an existing --out (not checked: only when no VM uses it, see image list)',
  })
  parseForce(): boolean {
    return true;
  }

  async run(_: string[], options: ImageBuildOptions = {}): Promise<void> {
    if (process.getuid?.() !== 0) {
      throw new CliFailure(
        'image build needs root (mmdebstrap and a loop device): run it as root or with sudo',
        ExitCode.Refused,
      );
    }
    const args = [imageBuilderPath()];
    for (const name of BUILDER_OPTIONS) {
      const value = options[name];
      if (value !== undefined) args.push(`--${name}`, value);
    }
    if (options.force) args.push('--force');
    const code = await new Promise<number>((resolve, reject) => {
      const builder = spawn('bash', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      builder.stdout.on('data', (chunk: Buffer) => this.io.stdout.write(chunk.toString()));
      builder.stderr.on('data', (chunk: Buffer) => this.io.stderr.write(chunk.toString()));
      builder.on('error', reject);
      builder.on('close', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0)));
    });
    // The builder said why; its usage errors stay usage errors.
    if (code !== 0) {
      throw new CliFailure(
        `image build failed (exit ${code})`,
        code === 2 ? ExitCode.Usage : ExitCode.Refused,
      );
    }
  }
}

interface ImageListOptions {
  images: string;
  disks: string;
}

/**
 * The disks an image has: the VMs' ids, a deleted VM's kept disk marked so. Names read from the
 * agent's folders, so printable: a file named with terminal escapes must not reach root's screen.
 */
function usedBy(image: NodeImage): string {
  if (image.disks.length === 0) return 'nothing (can be deleted)';
  return image.disks
    .map(({ vmId, deleted }) => `${printable(vmId)}${deleted ? ' (deleted, kept)' : ''}`)
    .join(', ');
}

@SubCommand({
  name: 'list',
  description:
    "on a node: its base images and the VMs whose disks are overlays on each (as root: reads the agent's files)",
})
export class ImageListCommand extends CommandRunner {
  constructor(private readonly terminal: Terminal) {
    super();
  }

  @Option({
    flags: '--images <dir>',
    description: 'the folder of base images',
    defaultValue: DEFAULT_IMAGES_DIR,
  })
  parseImages(value: string): string {
    return value;
  }

  @Option({
    flags: '--disks <dir>',
    description: "the agent's VM_DISK_DIR",
    defaultValue: DEFAULT_DISK_DIR,
  })
  parseDisks(value: string): string {
    return value;
  }

  async run(_: string[], options: ImageListOptions): Promise<void> {
    const images = await nodeImages(options.images, options.disks);
    if (images.length === 0) {
      this.terminal.print(`no image in ${printable(options.images)}, none named by a disk`);
      return;
    }
    const rows = images.map((image) => [
      printable(image.path),
      image.sizeBytes === undefined ? 'missing' : `${Math.round(image.sizeBytes / 2 ** 20)} MB`,
      image.builtAt?.toISOString().slice(0, 16).replace('T', ' ') ?? '-',
      usedBy(image),
    ]);
    this.terminal.print(
      formatTable(
        [
          { header: 'IMAGE' },
          { header: 'SIZE', align: 'right' },
          { header: 'WRITTEN' },
          { header: 'USED BY' },
        ],
        rows,
        this.terminal.colour,
      ),
    );
  }
}

@Command({
  name: 'image',
  description: 'build a base image for the agents, or list the images of a node and their VMs',
  subCommands: [ImageBuildCommand, ImageListCommand],
})
export class ImageCommand extends CommandRunner {
  run([given]: string[] = []): Promise<void> {
    const commands = 'build or list (see ppn-fleet image --help)';
    return Promise.reject(
      new CliFailure(
        given === undefined
          ? `image needs a command: ${commands}`
          : `image has no command ${printable(given)}: it takes ${commands}`,
        ExitCode.Usage,
      ),
    );
  }
}
