import { ConfigurationError, packageVersion } from '@app/daemon';
import { CommandFactory, CommandRunnerService } from 'nest-commander';
import { CliIo } from './terminal/cli-io';
import { CliFailure, ExitCode } from './api/exit-codes';
import { PpnFleetModule } from './ppn-fleet.module';
import { printableLines } from './terminal/printable';

/** Commander's own outcomes that are not failures: --help and --version. */
const COMMANDER_SUCCESSES = new Set(['commander.helpDisplayed', 'commander.version']);

/**
 * The exit code of a failed run, its message written to stderr (made safe for a terminal: it may
 * quote the controller). Commander has already printed its usage errors (exit 2); a CliFailure
 * says its own code; anything else is a bug, exit 1, its message only (its stack trace too with
 * PPN_FLEET_DEBUG=1).
 */
export function exitCodeOf(error: unknown, io: Pick<CliIo, 'stderr' | 'env'>): ExitCode {
  const commander = error as { code?: unknown; exitCode?: unknown };
  if (typeof commander.code === 'string' && commander.code.startsWith('commander.')) {
    return COMMANDER_SUCCESSES.has(commander.code) || commander.exitCode === 0
      ? ExitCode.Ok
      : ExitCode.Usage;
  }
  if (error instanceof CliFailure) {
    io.stderr.write(`ppn-fleet: ${printableLines(error.message)}\n`);
    return error.exitCode;
  }
  if (error instanceof ConfigurationError) {
    io.stderr.write(`ppn-fleet: ${error.message}\n`);
    return ExitCode.Usage;
  }
  const debug = io.env.PPN_FLEET_DEBUG === '1';
  const text =
    error instanceof Error ? ((debug ? error.stack : undefined) ?? error.message) : String(error);
  io.stderr.write(`ppn-fleet: ${printableLines(text)}\n`);
  return ExitCode.Refused;
}

/** Runs `ppn-fleet <args>` with `io`; resolves to its exit code. */
export async function runCli(args: readonly string[], io: CliIo): Promise<ExitCode> {
  let exitCode = ExitCode.Ok;
  const app = await CommandFactory.createWithoutRunning(PpnFleetModule.forIo(io), {
    logger: false,
    cliName: 'ppn-fleet',
    version: packageVersion(),
    outputConfiguration: {
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      // Commander's own errors (`error: unknown option ...`) in the CLI's one style.
      outputError: (text, write) => write(text.replace(/^error: /, 'ppn-fleet: ')),
    },
    serviceErrorHandler: (error) => {
      exitCode = exitCodeOf(error, io);
    },
  });
  try {
    await app.get(CommandRunnerService).run(['node', 'ppn-fleet', ...args]);
  } finally {
    await app.close();
  }
  return exitCode;
}
