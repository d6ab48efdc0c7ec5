import { closeSync, openSync, readSync } from 'node:fs';
import { ClassConstructor, plainToInstance } from 'class-transformer';
import { ValidateBy, validateSync } from 'class-validator';

/** Raised at start-up, naming every variable at fault (never its value: it may be a secret). */
export class ConfigurationError extends Error {}

/**
 * Reads a daemon's VM_* variables into `environmentClass` and validates them once: an empty
 * variable counts as unset, and one error names every missing and every invalid variable.
 * Each of `secrets` may instead be given as NAME_FILE, a path whose content is the value (as
 * systemd credentials hand them over); it is then validated as if given directly.
 */
export function readEnvironment<T extends object>(
  environmentClass: ClassConstructor<T>,
  env: NodeJS.ProcessEnv,
  required: readonly string[] = [],
  secrets: readonly string[] = [],
): Record<string, string> {
  const given: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith('VM_') && value !== undefined && value.trim() !== '') {
      given[name] = value.trim();
    }
  }
  const problems: string[] = [];
  const fromFile = new Set<string>();
  for (const name of secrets) {
    const fileVariable = `${name}_FILE`;
    const path = given[fileVariable];
    delete given[fileVariable];
    if (path === undefined) continue;
    if (given[name] !== undefined) {
      problems.push(`set ${name} or ${fileVariable}, not both`);
      delete given[name];
      continue;
    }
    const content = readSecretFile(path);
    if (typeof content === 'string') {
      given[name] = content;
      fromFile.add(name);
    } else {
      problems.push(`${fileVariable} names a file that cannot be used: ${content.problem}`);
    }
  }
  const missing = required.filter((name) => given[name] === undefined);
  const invalid = validateSync(plainToInstance(environmentClass, given))
    .filter((error) => !missing.includes(error.property))
    .flatMap((error) =>
      Object.values(error.constraints ?? {}).map((message) =>
        fromFile.has(error.property) ? `${message} (read from ${error.property}_FILE)` : message,
      ),
    );
  if (missing.length > 0) {
    problems.unshift(`missing required environment variable(s): ${missing.join(', ')}`);
  }
  problems.push(...invalid);
  if (problems.length > 0) throw new ConfigurationError(problems.join('; '));
  return given;
}

/** Far above any token; a bound so that a path such as /dev/zero cannot fill memory. */
const MAX_SECRET_FILE_BYTES = 4096;

/**
 * The content of a secret file, surrounding whitespace (the trailing newline) trimmed. The path
 * is never echoed: a token pasted into the _FILE variable by mistake must not reach the log.
 */
function readSecretFile(path: string): string | { problem: string } {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    return { problem: describeFileError(error) };
  }
  try {
    const buffer = Buffer.alloc(MAX_SECRET_FILE_BYTES + 1);
    let length = 0;
    for (;;) {
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
      if (length > MAX_SECRET_FILE_BYTES) {
        return { problem: `it holds more than ${MAX_SECRET_FILE_BYTES} bytes` };
      }
    }
    const content = buffer.subarray(0, length).toString('utf8').trim();
    return content === '' ? { problem: 'it is empty' } : content;
  } catch (error) {
    return { problem: describeFileError(error) };
  } finally {
    closeSync(fd);
  }
}

function describeFileError(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? `cannot read it (${code})` : 'cannot read it';
}

/** Shortest bearer token a daemon accepts: anything shorter could be guessed or is a mistake. */
export const MIN_TOKEN_LENGTH = 16;
const MAX_TOKEN_LENGTH = 1024;
/** RFC 6750's b64token: what fits in `Authorization: Bearer ...` as is (hex and base64 do). */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** A bearer token variable: 16 to 1024 characters a header carries as is. */
export function IsBearerToken(variable: string): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isBearerToken',
      validator: {
        validate: (value: unknown) =>
          typeof value === 'string' &&
          value.length >= MIN_TOKEN_LENGTH &&
          value.length <= MAX_TOKEN_LENGTH &&
          B64TOKEN.test(value),
      },
    },
    {
      message: `${variable} must be ${MIN_TOKEN_LENGTH} to ${MAX_TOKEN_LENGTH} characters of A-Z a-z 0-9 - . _ ~ + / (and = at the end), such as the output of \`openssl rand -hex 32\``,
    },
  );
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
