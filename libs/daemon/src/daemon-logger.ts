import { ConsoleLogger, LogLevel } from '@nestjs/common';
import { escapeControlCharacters } from './printable';

/** Nest's own start-up chatter: one line per module and route, which operators do not need. */
const BOOT_CONTEXTS = new Set([
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestFactory',
]);

/**
 * Nest's console logger without the boot chatter, so a daemon starts with one line of its own.
 * Every message is one line: control characters in it (a newline in a hostname, say) are
 * written as escapes, so nothing logged can start a line of its own.
 */
export class DaemonLogger extends ConsoleLogger {
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
}
