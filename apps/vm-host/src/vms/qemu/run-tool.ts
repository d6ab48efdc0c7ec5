import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/**
 * Runs a host tool (qemu-img, genisoimage, qemu-system-*) to its end; a failure says which tool
 * and the last lines it printed on stderr (or why it could not run), never a shell in between.
 * Resolves with what it printed on stdout.
 */
export async function runTool(
  command: string,
  args: string[],
  timeoutMs = 30_000,
  /** The tool a failure names, when `command` only runs it (the guests' cgroup's shell). */
  tool = command,
  /** Aborted: the tool is killed (SIGTERM) and the call rejects at once. */
  signal?: AbortSignal,
): Promise<string> {
  try {
    const { stdout } = await exec(command, args, { timeout: timeoutMs, encoding: 'utf8', signal });
    return stdout;
  } catch (error) {
    const output = (error as { stderr?: unknown }).stderr;
    const stderr = (typeof output === 'string' ? output : '').trim();
    const reason = stderr || (error as Error).message;
    throw new Error(`${tool} failed: ${reason.split('\n').slice(-3).join(' ')}`);
  }
}
