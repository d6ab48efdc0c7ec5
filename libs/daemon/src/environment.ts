import { ClassConstructor, plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';

/** Raised at start-up, naming every variable at fault (never its value: it may be a secret). */
export class ConfigurationError extends Error {}

/**
 * Reads a daemon's VM_* variables into `environmentClass` and validates them once: an empty
 * variable counts as unset, and one error names every missing and every invalid variable.
 */
export function readEnvironment<T extends object>(
  environmentClass: ClassConstructor<T>,
  env: NodeJS.ProcessEnv,
  required: readonly string[] = [],
): Record<string, string> {
  const given: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith('VM_') && value !== undefined && value.trim() !== '') {
      given[name] = value.trim();
    }
  }
  const missing = required.filter((name) => given[name] === undefined);
  const invalid = validateSync(plainToInstance(environmentClass, given))
    .filter((error) => !missing.includes(error.property))
    .flatMap((error) => Object.values(error.constraints ?? {}));
  const problems: string[] = [];
  if (missing.length > 0) {
    problems.push(`missing required environment variable(s): ${missing.join(', ')}`);
  }
  problems.push(...invalid);
  if (problems.length > 0) throw new ConfigurationError(problems.join('; '));
  return given;
}

/** Neither daemon takes flags: every argument is refused, pointing at the environment. */
export function refuseArguments(
  program: string,
  args: readonly string[],
  variables: readonly string[],
): void {
  if (args.length > 0) {
    throw new ConfigurationError(
      `${program} takes no arguments (got ${args.length}); configure it with environment variables: ${variables.join(', ')}`,
    );
  }
}
