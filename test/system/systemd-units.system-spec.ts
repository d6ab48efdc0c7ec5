import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchFolder } from '../support/scratch-folders';

const UNITS = join(__dirname, '../../deploy/systemd');
const COMMANDS = Object.keys(
  (JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')) as { bin: object }).bin,
);

/** systemd's own check of unit files (Debian package systemd); missing, the test fails. */
function verify(...files: string[]): { status: number | null; output: string } {
  const result = spawnSync('systemd-analyze', ['verify', ...files], { encoding: 'utf8' });
  if (result.error) {
    throw new Error(
      `systemd-analyze cannot run (${result.error.message}): install Debian's systemd`,
    );
  }
  return { status: result.status, output: `${result.stdout}${result.stderr}`.trim() };
}

describe('the systemd units', () => {
  const units = readdirSync(UNITS).filter((name) => name.endsWith('.service'));
  const scratch = scratchFolder('units-');

  it('ship one unit per command', () => {
    expect(units.sort()).toEqual(COMMANDS.map((command) => `${command}.service`).sort());
  });

  it.each(units)('%s passes systemd-analyze verify without a single remark', (unit) => {
    expect(verify(join(UNITS, unit))).toEqual({ status: 0, output: '' });
  });

  it.each(units)(
    '%s starts its command wherever npm put it: through env, on the PATH systemd gives services',
    (unit) => {
      const command = unit.replace(/\.service$/, '');
      const execStart = readFileSync(join(UNITS, unit), 'utf8')
        .split('\n')
        .filter((line) => line.startsWith('ExecStart='));
      expect(execStart).toEqual([`ExecStart=/usr/bin/env ${command}`]);
      // npm's global bin folder is /usr/bin with Debian's npm, /usr/local/bin with Node's own.
      const path = spawnSync('systemd-path', ['search-binaries-default'], { encoding: 'utf8' });
      expect(path.stdout.trim().split(':')).toEqual(
        expect.arrayContaining(['/usr/bin', '/usr/local/bin']),
      );
    },
  );

  it('would catch a unit that calls the command at a fixed path npm did not use', () => {
    const unit = join(scratch, 'service-vm-host.service');
    copyFileSync(join(UNITS, 'service-vm-host.service'), unit);
    const text = readFileSync(unit, 'utf8').replace(
      'ExecStart=/usr/bin/env service-vm-host',
      'ExecStart=/nonexistent/bin/service-vm-host',
    );
    writeFileSync(unit, text);
    const { status, output } = verify(unit);
    expect(status).not.toBe(0);
    expect(output).toContain('/nonexistent/bin/service-vm-host');
  });
});
