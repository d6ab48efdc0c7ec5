import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { GUEST_IMAGE_BUILDER } from '../support/guest-image';

/**
 * The Debian image builder's options end up in mmdebstrap's arguments and the guest's
 * sources.list: a value that would add a word or a line there is refused before anything is
 * built (the checks run before the root check, so nothing here builds an image).
 */
/**
 * The builder as nobody: not root, should a check ever let it through (it stops at its root
 * check). The script on bash's stdin, read here: the checkout may sit in a folder the
 * unprivileged user cannot reach (a clone in root's 0700 home).
 */
function asNobody(args: string[]) {
  return spawnSync('bash', ['-s', '--', ...args], {
    input: readFileSync(GUEST_IMAGE_BUILDER),
    cwd: '/',
    encoding: 'utf8',
    timeout: 10_000,
    uid: 65534,
    gid: 65534,
  });
}

describe('build-debian-image.sh --mirror', () => {
  it.each([
    ['a tab', 'http://deb.debian.org/debian\tbookworm'],
    ['a newline', 'http://deb.debian.org/debian\ndeb http://evil.example/ bookworm main'],
    ['a space', 'http://deb.debian.org/debian bookworm'],
    ['a carriage return', 'http://deb.debian.org/debian\r'],
    ['a control character', 'http://deb.debian.org/debian\u0001'],
    ['credentials, which would reach every guest', 'https://user:secret@mirror.example/debian'],
  ])('refuses a mirror with %s, naming --mirror, and builds nothing', (_what, mirror) => {
    const run = asNobody(['--mirror', mirror]);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('build-debian-image: --mirror');
    expect(run.stderr).toContain('is not valid');
    expect(run.stderr).not.toContain('needs root');
  });
});

describe('build-debian-image.sh --suite and --include', () => {
  it.each([
    ['--suite', '--help'],
    ['--suite', '-v'],
    ['--include', 'curl,--force-yes'],
    ['--include', '-x'],
    ['--include', 'curl,,wget'],
  ])('refuses %s %s: nothing that mmdebstrap (as root) could take as an option', (flag, value) => {
    const run = asNobody([flag, value]);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`build-debian-image: ${flag}`);
    expect(run.stderr).toContain('is not valid');
  });
});

describe('build-debian-image.sh --group', () => {
  /** The builder as root, stopped by a check before it builds anything. */
  function asRoot(args: string[]): { status: number | null; stderr: string } {
    const run = spawnSync('bash', ['-s', '--', ...args], {
      input: readFileSync(GUEST_IMAGE_BUILDER),
      cwd: '/',
      encoding: 'utf8',
      timeout: 10_000,
    });
    return { status: run.status, stderr: run.stderr };
  }

  it('refuses a group name this machine does not have, pointing at a numeric gid or install -g', () => {
    if (process.getuid?.() !== 0)
      throw new Error('runs as root (the group check follows the root check)');
    const refused = asRoot(['--group', 'no-such-group-ppn']);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('--group no-such-group-ppn: no such group here');
    expect(refused.stderr).toContain('numeric gid');
  });

  it('takes a numeric gid no group has here (the vm-host of the nodes): it goes on to --out', () => {
    if (process.getuid?.() !== 0)
      throw new Error('runs as root (the group check follows the root check)');
    // An existing --out stops it next, before anything is built.
    const run = asRoot(['--group', '64999', '--out', '/etc/hostname']);
    expect(run.status).toBe(1);
    expect(run.stderr).not.toContain('--group');
    expect(run.stderr).toContain('/etc/hostname exists');
  });
});
