import { execFile } from 'node:child_process';
import { Logger } from '@nestjs/common';

/** Runs a command to its end with `env` as its whole environment; rejects when it fails. */
export type CommandRunner = (
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
) => Promise<void>;

const SYSTEMD_NOTIFY_TIMEOUT_MS = 10_000;

function runCommand(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { env, timeout: SYSTEMD_NOTIFY_TIMEOUT_MS }, (error, _out, stderr) => {
      if (!error) return resolve();
      const said = String(stderr).trim().split('\n').slice(-2).join(' ');
      reject(new Error(said || error.message));
    });
  });
}

/**
 * Tells systemd the daemon is ready (its unit is `Type=notify`) once it listens, with `status`
 * as the unit's status line. Without NOTIFY_SOCKET (not started by systemd as Type=notify) it
 * does nothing.
 *
 * NOTIFY_SOCKET is a unix datagram socket, which Node cannot write to without a native add-on,
 * so systemd's own `systemd-notify --ready` sends the message. It runs as a child of the daemon,
 * hence the units' NotifyAccess=all; it waits until systemd has read the message (its barrier),
 * so systemd can still tell which unit the child belongs to.
 *
 * NOTIFY_SOCKET is then removed from the environment, as sd_notify does: the processes the
 * daemon starts later (QEMU) must not speak for the unit.
 *
 * A failure is a warning, not a stop: the daemon serves, but systemd will stop it after
 * TimeoutStartSec=, which the warning says.
 */
export async function notifyServiceReady(
  name: string,
  status: string,
  env: NodeJS.ProcessEnv = process.env,
  run: CommandRunner = runCommand,
): Promise<void> {
  const socket = env.NOTIFY_SOCKET;
  if (!socket) return;
  delete env.NOTIFY_SOCKET;
  try {
    await run('systemd-notify', ['--ready', `--status=${status}`], {
      ...env,
      NOTIFY_SOCKET: socket,
    });
  } catch (error) {
    new Logger(name).warn(
      `could not tell systemd that it is ready (systemd-notify: ${error instanceof Error ? error.message : String(error)}); a Type=notify unit will be stopped after its TimeoutStartSec`,
    );
  }
}
