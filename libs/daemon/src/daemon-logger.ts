import { ConsoleLogger } from '@nestjs/common';

/** Nest's own start-up chatter: one line per module and route, which operators do not need. */
const BOOT_CONTEXTS = new Set([
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestFactory',
]);

/** Nest's console logger without the boot chatter, so a daemon starts with one line of its own. */
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
}
