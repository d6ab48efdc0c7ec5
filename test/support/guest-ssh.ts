import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { GUEST_USER } from './guest-image';

const run = promisify(execFile);

/** Create to SSH under TCG on a loaded 2-core machine (seen: 30-100 s). */
export const GUEST_SSH_DEADLINE_MS = 180_000;

/**
 * Runs `command` in a guest as the image's user with the private key `key` only (batch mode, no
 * host key kept: every VM has new ones); rejects on failure, with ssh's stderr.
 */
export async function sshRun(
  key: string,
  host: string,
  port: number,
  command: string,
): Promise<string> {
  const { stdout } = await run(
    'ssh',
    [
      ...['-i', key, '-p', String(port), '-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes'],
      ...['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null'],
      ...['-o', 'ConnectTimeout=10', '-o', 'LogLevel=ERROR'],
      `${GUEST_USER}@${host}`,
      command,
    ],
    { timeout: 30_000 },
  );
  return stdout;
}

/** The last `lines` lines of a text file, or why there are none. */
export function tailOf(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch (error) {
    return `(${(error as Error).message})`;
  }
}

/**
 * `command`'s output in the guest once SSH answers, trying every 2 s until `deadlineMs` after
 * `since`. Past it, the error says what ssh said last and how far the guest got (the last lines
 * of its console, `serialLog`).
 */
export async function sshOnceUp(
  key: string,
  host: string,
  port: number,
  command: string,
  { since, deadlineMs, serialLog }: { since: number; deadlineMs: number; serialLog: string },
): Promise<string> {
  let lastSshError = '(none)';
  const deadline = since + deadlineMs;
  for (;;) {
    try {
      return await sshRun(key, host, port, command);
    } catch (error) {
      const failed = error as Error & { stderr?: string };
      lastSshError = failed.stderr?.trim() || failed.message;
    }
    if (Date.now() >= deadline) {
      throw new Error(
        `timed out after ${deadlineMs} ms waiting for SSH to ${GUEST_USER}@${host}:${port}\n` +
          `last ssh error: ${lastSshError}\n${serialLog}, last lines:\n${tailOf(serialLog, 40)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, deadline - Date.now())));
  }
}
