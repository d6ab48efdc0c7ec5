import { ChildProcessByStdio, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';

/**
 * A bench script beside this file run in a process of its own (TypeScript as is, the `@app/`
 * paths mapped), its stdin and stdout piped (a script may be told when to go on its stdin).
 */
export function spawnBenchScript(
  script: string,
  args: string[],
): ChildProcessByStdio<Writable, Readable, null> {
  return spawn(
    process.execPath,
    [
      '-r',
      'ts-node/register/transpile-only',
      '-r',
      'tsconfig-paths/register',
      join(__dirname, script),
      ...args,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
}
