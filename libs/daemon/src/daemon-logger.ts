import { ConsoleLogger, LogLevel } from '@nestjs/common';
import { escapeControlCharacters } from './printable';
import { IsIn } from 'class-validator';
import { inspect } from 'node:util';
import { ConfigurationError, EnvironmentVariable } from './environment';

/** Nest's own start-up chatter: one line per module and route, which operators do not need. */
const BOOT_CONTEXTS = new Set([
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestFactory',
]);

export const LOG_FORMATS = ['text', 'json'] as const;
/** `text`: Nest's console lines (the default); `json`: one JSON object per line. */
export type LogFormat = (typeof LOG_FORMATS)[number];

/** What both daemons read from their environment; each app's configuration extends this one. */
export class DaemonConfig {
  /** VM_LOG_FORMAT; unset is text. */
  @EnvironmentVariable('VM_LOG_FORMAT', {
    validate: IsIn(LOG_FORMATS, { message: '$property must be text or json' }),
    read: (value): LogFormat | undefined => (value === 'json' ? 'json' : undefined),
  })
  logFormat?: LogFormat;
}

/**
 * The log format the environment asks for, read before the configuration is validated so that
 * even a configuration error is printed in it. Anything but `json` is text.
 */
export function logFormatOf(env: NodeJS.ProcessEnv): LogFormat {
  return env.VM_LOG_FORMAT?.trim() === 'json' ? 'json' : 'text';
}

/** One JSON log line, as pipelines expect it: `level` in their words (Nest's `log` is `info`). */
export interface JsonLogLine {
  time: string;
  level: string;
  msg: string;
  context?: string;
  node_id?: string;
  vm_id?: string;
  stack?: string;
}

/**
 * Our lines name what they are about: they start with "node <node_id>" or "vm <vm_id>", or say
 * "on node <node_id>" (see the brief's logging rule); those become fields. Ids follow
 * ID_PATTERN, less a trailing dot. Elsewhere in a line "node" is a plain word ("no node has").
 */
const NODE_ID = /(?:^|\bon )node ([A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9_-])?)/;
const VM_ID = /^vm ([A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9_-])?)/;

export interface LogEntry {
  level: LogLevel;
  message: unknown;
  context?: string;
  stack?: unknown;
  /** The node every line of this process is about (the agent's own), if any. */
  nodeId?: string;
}

export function jsonLogLine(entry: LogEntry, now = new Date()): JsonLogLine {
  const { level, message, context, stack } = entry;
  const msg = typeof message === 'string' ? message : inspect(message, { breakLength: Infinity });
  const line: JsonLogLine = {
    time: now.toISOString(),
    level: level === 'log' ? 'info' : level,
    msg,
  };
  if (context) line.context = context;
  const nodeId = entry.nodeId ?? NODE_ID.exec(msg)?.[1];
  if (nodeId) line.node_id = nodeId;
  const vmId = VM_ID.exec(msg)?.[1];
  if (vmId) line.vm_id = vmId;
  if (typeof stack === 'string' && stack !== '') line.stack = stack;
  return line;
}

let processWarningsLogged = false;

/**
 * Whether text log lines may be coloured: only on a terminal (`stream` a TTY), never with
 * `NO_COLOR` set or `TERM=dumb`. The journal (`journalctl -o cat`) and a file `npm start` is
 * redirected to get plain text, not ANSI escapes.
 */
export function logColours(
  env: NodeJS.ProcessEnv,
  stream: { isTTY?: boolean } = process.stdout,
): boolean {
  return stream.isTTY === true && !env.NO_COLOR && env.TERM !== 'dumb';
}

/**
 * Nest's console logger without the boot chatter, so a daemon starts with one line of its own.
 * In `json` format (Nest's own JSON mode, with our field names) every line is one JSON object.
 * Text is coloured on a terminal only (`logColours`).
 * In `text` format every message is still one line: control characters in it (a newline in a
 * hostname, say) are written as escapes, so nothing logged can start a line of its own.
 */
export class DaemonLogger extends ConsoleLogger {
  constructor(
    format: LogFormat = 'text',
    /** Set by the agent: every line it writes is about its node. */
    private readonly nodeId?: string,
    /** Colours in text format: on a terminal only (Nest's default colours any stream). */
    colours = logColours(process.env),
  ) {
    super(format === 'json' ? { json: true, colors: false } : { colors: colours });
    if (format === 'json' && !processWarningsLogged) {
      // Node prints its own warnings as text ("(node:42) Warning: ..."); in json format they
      // are lines of this logger like any other. Once per process: the first logger takes them.
      processWarningsLogged = true;
      process.removeAllListeners('warning');
      process.on('warning', (warning) => this.warn(`${warning.name}: ${warning.message}`, 'Node'));
    }
  }

  override log(message: unknown, context?: string): void;
  override log(message: unknown, ...optionalParams: unknown[]): void {
    const context = optionalParams[optionalParams.length - 1];
    if (typeof context === 'string' && BOOT_CONTEXTS.has(context)) return;
    if (context === 'NestApplication' && message === 'Nest application successfully started') {
      return;
    }
    super.log(message, ...(optionalParams as [string]));
  }

  protected override stringifyMessage(message: unknown, logLevel: LogLevel): string {
    if (typeof message === 'string') {
      return super.stringifyMessage(escapeControlCharacters(message), logLevel) as string;
    }
    // Objects are rendered by util.inspect, possibly over several lines and with colours.
    return (super.stringifyMessage(message, logLevel) as string).replace(/\r?\n/g, '\\n');
  }

  protected override printStackTrace(stack: string): void {
    super.printStackTrace(stack && escapeControlCharacters(stack));
  }
  protected override printAsJson(
    message: unknown,
    options: {
      context: string;
      logLevel: LogLevel;
      writeStreamType?: 'stdout' | 'stderr';
      errorStack?: unknown;
    },
  ): void {
    const line = jsonLogLine({
      level: options.logLevel,
      message,
      context: options.context,
      stack: options.errorStack,
      nodeId: this.nodeId,
    });
    process[options.writeStreamType ?? 'stdout'].write(`${JSON.stringify(line)}\n`);
  }
}

/**
 * Prints why a daemon could not start, in the format the environment asks for (the app and its
 * logger may not exist yet), and exits: 2 for a configuration error, 1 for anything else.
 */
export function exitOnStartupFailure(
  program: string,
  error: unknown,
  env: NodeJS.ProcessEnv,
): never {
  const isConfigurationError = error instanceof ConfigurationError;
  const reason = error instanceof Error ? error.message : String(error);
  const msg = isConfigurationError
    ? `${program}: configuration error: ${reason}`
    : `${program} failed to start: ${reason}`;
  process.stderr.write(
    logFormatOf(env) === 'json'
      ? `${JSON.stringify(jsonLogLine({ level: 'error', message: msg, context: program }))}\n`
      : `${msg}\n`,
  );
  process.exit(isConfigurationError ? 2 : 1);
}
