/**
 * The Debian guest image of the real-guest test (test/system/guest.system-spec.ts), made by
 * deploy/images/build-debian-image.sh and cached in test/system/.guest-image/ (gitignored) under
 * a key of the builder's code (its comment lines left out, so a reworded comment does not cost a
 * build): a run builds it only when there is none for this builder yet.
 *
 * Run as a program, it makes the image when missing: `npm run test:system` does so before
 * test/isolated.sh, since the build needs Debian's mirror and inside there is no route out.
 * Not root, it says in one line that it cannot (the guest test then fails, naming why).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '../..');
export const GUEST_IMAGE_BUILDER = join(ROOT, 'deploy/images/build-debian-image.sh');
export const GUEST_IMAGE_DIR = join(ROOT, 'test/system/.guest-image');
/** Cloud-init's default user on Debian. */
export const GUEST_USER = 'debian';

/** Where the image of the current builder is (or goes). */
export function guestImagePath(): string {
  const code = readFileSync(GUEST_IMAGE_BUILDER, 'utf8')
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n');
  const key = createHash('sha256').update(code).digest('hex');
  return join(GUEST_IMAGE_DIR, `debian-bookworm-${key.slice(0, 16)}.qcow2`);
}

function prepare(): number {
  const image = guestImagePath();
  if (existsSync(image)) {
    console.log(`guest image: ${image} (cached)`);
    return 0;
  }
  if (process.getuid?.() !== 0) {
    console.error(
      `guest image: not root, so not built (the guest test will fail): sudo bash ${GUEST_IMAGE_BUILDER} --out ${image}`,
    );
    return 0;
  }
  mkdirSync(GUEST_IMAGE_DIR, { recursive: true, mode: 0o700 });
  // Images of older builders go: one image at a time (about 430 MB).
  for (const name of readdirSync(GUEST_IMAGE_DIR)) {
    if (/^debian-.*\.qcow2$/.test(name)) rmSync(join(GUEST_IMAGE_DIR, name), { force: true });
  }
  console.log(`guest image: building ${image}`);
  const build = spawnSync('bash', [GUEST_IMAGE_BUILDER, '--out', image], { stdio: 'inherit' });
  return build.status ?? 1;
}

if (require.main === module) process.exit(prepare());
