/**
 * The Debian guest image of the real-guest test (test/system/guest.system-spec.ts), made by
 * deploy/images/build-debian-image.sh and cached in test/system/.guest-image/ (gitignored) under
 * a key of the builder's whole file (its heredocs, comments among them, are what the guest gets):
 * a run builds it only when there is none for this builder yet.
 *
 * Run as a program, it makes the image when missing: `npm run test:system` does so before
 * test/isolated.sh, since the build needs Debian's mirror and inside there is no route out.
 * Not root, it says in one line that it cannot (the guest test then fails, naming why).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '../..');
export const GUEST_IMAGE_BUILDER = join(ROOT, 'deploy/images/build-debian-image.sh');
export const GUEST_IMAGE_DIR = join(ROOT, 'test/system/.guest-image');
/** The image's user (as cloud-init's default user on Debian's cloud images). */
export const GUEST_USER = 'debian';
/** The builder's work folders (mktemp next to its output). */
const WORK_FOLDER = /^\.build-debian-image\./;

/** Where the image of the current builder is (or goes). */
export function guestImagePath(): string {
  const key = createHash('sha256').update(readFileSync(GUEST_IMAGE_BUILDER)).digest('hex');
  return join(GUEST_IMAGE_DIR, `debian-bookworm-${key.slice(0, 16)}.qcow2`);
}

/** The command that builds it, readable by whoever runs the tests (root: without sudo). */
export function guestImageBuildCommand(): string {
  const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
  return `${sudo}bash ${GUEST_IMAGE_BUILDER} --out ${guestImagePath()} --owner ${userInfo().username}`;
}

/** Mount points at or under `dir`, from /proc/self/mountinfo (its blanks escaped as \040). */
function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .map((target) =>
      target.replace(/\\([0-7]{3})/g, (_, octal: string) =>
        String.fromCharCode(parseInt(octal, 8)),
      ),
    )
    .filter((target) => target === dir || target.startsWith(`${dir}/`));
}

/** Whether a builder runs on this machine (its work folder is then in use). */
function builderRunning(): boolean {
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (args.some((arg) => arg.endsWith('build-debian-image.sh'))) return true;
    } catch {
      // gone meanwhile
    }
  }
  return false;
}

/**
 * Removes work folders a stopped build left (SIGKILL, power loss: its own cleanup handles the
 * rest): unmounts what is mounted there, detaches its loop devices, and never deletes across a
 * mount. Left alone while any build runs.
 */
function sweepLeftoverBuilds(): void {
  const leftovers = readdirSync(GUEST_IMAGE_DIR).filter((name) => WORK_FOLDER.test(name));
  if (leftovers.length === 0 || builderRunning()) return;
  for (const name of leftovers) {
    const dir = join(GUEST_IMAGE_DIR, name);
    for (const target of mountsUnder(dir).sort().reverse()) {
      if (spawnSync('umount', ['-R', target]).status !== 0) {
        spawnSync('umount', ['-R', '-l', target]);
      }
    }
    const loops = spawnSync('losetup', ['-j', join(dir, 'disk.raw')], { encoding: 'utf8' });
    for (const line of (loops.stdout ?? '').split('\n').filter(Boolean)) {
      spawnSync('losetup', ['-d', line.split(':')[0]]);
    }
    const mounted = mountsUnder(dir);
    if (mounted.length > 0) {
      console.error(`guest image: ${dir} left in place, still mounted: ${mounted.join(' ')}`);
      continue;
    }
    spawnSync('rm', ['-rf', '--one-file-system', dir], { stdio: 'inherit' });
    console.log(`guest image: removed ${dir}, left by a build that was stopped`);
  }
}

function prepare(): number {
  const image = guestImagePath();
  if (existsSync(image)) {
    console.log(`guest image: ${image} (cached)`);
    return 0;
  }
  if (process.getuid?.() !== 0) {
    console.error(
      `guest image: not root, so not built (the guest test will fail): ${guestImageBuildCommand()}`,
    );
    return 0;
  }
  mkdirSync(GUEST_IMAGE_DIR, { recursive: true, mode: 0o700 });
  sweepLeftoverBuilds();
  console.log(`guest image: building ${image}`);
  const build = spawnSync('bash', [GUEST_IMAGE_BUILDER, '--out', image], { stdio: 'inherit' });
  if (build.status !== 0) return build.status ?? 1;
  // Images of older builders go once this one is made: one image at a time (about 430 MB).
  for (const name of readdirSync(GUEST_IMAGE_DIR)) {
    const old = join(GUEST_IMAGE_DIR, name);
    if (/^debian-.*\.qcow2$/.test(name) && old !== image) rmSync(old, { force: true });
  }
  return 0;
}

if (require.main === module) process.exit(prepare());
