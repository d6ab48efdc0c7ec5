import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { FLEET_PORT } from '@app/fleet-domain';
import { scratchFolder } from '../support/scratch-folders';

const ROOT = join(__dirname, '../..');
/** package.json's bin: each command and the build output it runs. */
const BIN = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> }
).bin;
const COMMANDS = Object.keys(BIN);
/** The daemons, configured by environment only; the other command is the ppn-fleet CLI. */
const DAEMONS = COMMANDS.filter((command) => command !== 'ppn-fleet');

function npm(args: string[]): void {
  const result = spawnSync('npm', args, { cwd: ROOT, encoding: 'utf8', timeout: 240_000 });
  if (result.status !== 0) {
    throw new Error(
      `npm ${args.join(' ')} failed (${result.status}):\n${result.stdout}${result.stderr}`,
    );
  }
}

/**
 * The commands as an operator gets them: `npm install -g .` (here into a private prefix), then
 * a rebuild, as `npm start` or `npm test` do afterwards, then run by name from the bin folder.
 */
describe('the installed commands', () => {
  // Only links live there (to this checkout); removing it removes a link, never what it points at.
  const prefix = scratchFolder('npm-prefix-');
  const bin = join(prefix, 'bin');
  // Only what a login shell has: node for the #! line, and the npm bin folder.
  const env = { PATH: `${bin}:${dirname(process.execPath)}:/usr/bin:/bin`, NO_COLOR: '1' };

  beforeAll(() => {
    // npm links only the commands whose files exist.
    if (!COMMANDS.every((command) => existsSync(join(ROOT, BIN[command])))) {
      npm(['run', 'build']);
    }
    npm(['install', '-g', '--prefix', prefix, '.', '--offline', '--no-audit', '--no-fund']);
    npm(['run', 'build']);
  }, 600_000);

  it.each(COMMANDS)('keeps %s executable after a rebuild', (command) => {
    const target = realpathSync(join(bin, command));
    expect(target).toBe(realpathSync(join(ROOT, BIN[command])));
    expect(() => accessSync(target, constants.X_OK)).not.toThrow();
  });

  it.each(DAEMONS)('runs %s by name, which refuses an argument clearly (exit 2)', (command) => {
    const result = spawnSync(command, ['--port', '8080'], {
      env,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect({ status: result.status, signal: result.signal, stderr: result.stderr }).toEqual({
      status: 2,
      signal: null,
      stderr: expect.stringContaining(
        `${command}: configuration error: ${command} takes no arguments (got 2); configure it with environment variables: `,
      ),
    });
  });

  it('runs ppn-fleet by name: --version, and an unknown option is a usage error (exit 2)', () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    const shown = spawnSync('ppn-fleet', ['--version'], { env, encoding: 'utf8', timeout: 30_000 });
    expect({ status: shown.status, stdout: shown.stdout }).toEqual({
      status: 0,
      stdout: `${version}\n`,
    });
    const refused = spawnSync('ppn-fleet', ['--port', '8080'], {
      env,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect({ status: refused.status, stderr: refused.stderr }).toEqual({
      status: 2,
      stderr: expect.stringContaining("ppn-fleet: unknown option '--port'"),
    });
  });

  it(`starts service-vm-fleet by name on :${FLEET_PORT}, and stops it cleanly`, async () => {
    const child = spawn('service-vm-fleet', [], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const exited = new Promise<number | null>((resolve) =>
      child.on('exit', (code) => resolve(code)),
    );
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`not listening in 30 s:\n${output}`)),
          30_000,
        );
        const collect = (chunk: Buffer): void => {
          output += chunk.toString('utf8');
          if (output.includes(`listening on 0.0.0.0:${FLEET_PORT}`)) {
            clearTimeout(timer);
            resolve();
          }
        };
        child.stdout.on('data', collect);
        child.stderr.on('data', collect);
        void exited.then(() => reject(new Error(`exited before listening:\n${output}`)));
      });
      const answer = await fetch(`http://127.0.0.1:${FLEET_PORT}/v1/fleet`);
      expect(answer.status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 60_000);
});
