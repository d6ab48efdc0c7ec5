import type { LoggerService } from '@nestjs/common';
import { inspect } from 'node:util';

/**
 * jest setupFilesAfterEnv of the unit tier: Nest's Logger writes into the lines that
 * unit-environment.ts prints with a failed test only. A spec that asserts what is logged spies
 * on Logger (or gives its own logger) as before: both still see every line.
 */
const logs = (globalThis as { __unitSpecLogs?: string[] }).__unitSpecLogs ?? [];

function line(level: string, message: unknown, params: unknown[]): string {
  const context = typeof params.at(-1) === 'string' ? ` [${String(params.at(-1))}]` : '';
  const text = typeof message === 'string' ? message : inspect(message);
  return `${level}${context} ${text}`;
}

const collected: LoggerService = {
  log: (message: unknown, ...params: unknown[]) => logs.push(line('LOG', message, params)),
  error: (message: unknown, ...params: unknown[]) => logs.push(line('ERROR', message, params)),
  warn: (message: unknown, ...params: unknown[]) => logs.push(line('WARN', message, params)),
  debug: (message: unknown, ...params: unknown[]) => logs.push(line('DEBUG', message, params)),
  verbose: (message: unknown, ...params: unknown[]) => logs.push(line('VERBOSE', message, params)),
  fatal: (message: unknown, ...params: unknown[]) => logs.push(line('FATAL', message, params)),
};

// Only once a spec loads Nest: a spec of pure rules never loads @nestjs/common (most of a
// second per spec on a loaded machine). Nest's own files load the package again while it loads:
// that inner turn gets it unfinished (no Logger yet) and leaves the override to the outer one.
jest.doMock('@nestjs/common', () => {
  const nest = jest.requireActual<typeof import('@nestjs/common')>('@nestjs/common');
  if (nest.Logger !== undefined) nest.Logger.overrideLogger(collected);
  return nest;
});
