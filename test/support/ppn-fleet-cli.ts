import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '../..');
export const CLI_MAIN = join(ROOT, 'dist/apps/ppn-fleet/apps/ppn-fleet/src/main.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * `ppn-fleet <args>`, the built command, as a real process with only `env` (and PATH) in its
 * environment; killed after `timeoutMs`.
 */
export function ppnFleet(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 80_000,
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_MAIN, ...args], {
      env: { PATH: process.env.PATH, TMPDIR: tmpdir(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
