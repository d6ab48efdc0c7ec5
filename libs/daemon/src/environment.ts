import { Stats, closeSync, fstatSync, openSync, readSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { ValidateBy, validateSync } from 'class-validator';

/** Raised at start-up, naming every variable at fault (never its value: it may be a secret). */
export class ConfigurationError extends Error {}

/** How one field of a daemon's configuration comes from its environment variable. */
export interface VariableOptions<T> {
  /**
   * A class-validator decorator that checks the variable's trimmed string when it is set. Its
   * message names the variable as `$property` and must never include `$value` (it may be secret).
   */
  validate: PropertyDecorator;
  /** The daemon refuses to start without it; listed first wherever variables are listed. */
  required?: boolean;
  /**
   * May instead be given as NAME_FILE, a path whose content is the value (systemd credentials),
   * a file no one but its owner may read (mode 600 or 400, as ssh wants of a key).
   */
  secret?: boolean;
  /** A hook for tests: read like any other, but never listed or documented for operators. */
  testOnly?: boolean;
  /** The field's value when the variable is unset or empty. */
  default?: T;
  /** The field's value from the validated string; the string itself when absent. */
  read?: (value: string) => T;
}

/** What the documentation and the argument refusal know of a declared variable. */
export interface DeclaredVariable {
  name: string;
  required: boolean;
  secret: boolean;
  testOnly: boolean;
  default: unknown;
}

interface Declaration extends DeclaredVariable {
  field: string;
  read?: (value: string) => unknown;
  /** A class holding this variable's validation under its own name, so `$property` names it. */
  validation: new () => object;
}

/** Each configuration class's own declarations, in the order its fields are written. */
const DECLARATIONS = new Map<object, Declaration[]>();

/** Accepts a field only if what it holds could be what the variable reads as. */
type FieldDecorator<T> = <K extends string>(target: { [P in K]?: T }, field: K) => void;

/**
 * Declares that a configuration field is read from the environment variable `name`: this one
 * declaration is where the reader, its start-up messages, the argument refusal and the check of
 * docs/reference.md and the env example against the code (`variableNames`) all learn of the variable.
 */
export function EnvironmentVariable(
  name: string,
  options: VariableOptions<string> & { read?: undefined },
): FieldDecorator<string>;
export function EnvironmentVariable<T>(
  name: string,
  options: VariableOptions<T> & { read: (value: string) => T },
): FieldDecorator<T>;
export function EnvironmentVariable<T>(
  name: string,
  options: VariableOptions<T>,
): FieldDecorator<T> {
  return (target, field) => {
    const configClass = target.constructor;
    if (declarationsOf(configClass).some((declared) => declared.name === name)) {
      throw new Error(`${name} is declared twice in ${configClass.name}`);
    }
    const validation = class {};
    options.validate(validation.prototype, name);
    const own = DECLARATIONS.get(configClass) ?? [];
    own.push({
      name,
      field,
      required: options.required ?? false,
      secret: options.secret ?? false,
      testOnly: options.testOnly ?? false,
      default: options.default,
      read: options.read,
      validation,
    });
    DECLARATIONS.set(configClass, own);
  };
}

/** A class's declarations, then those it inherits (the shared ones, such as VM_LOG_FORMAT, last). */
function declarationsOf(configClass: object): Declaration[] {
  const all: Declaration[] = [];
  let c: unknown = configClass;
  while (typeof c === 'function' && c !== Function.prototype) {
    all.push(...(DECLARATIONS.get(c) ?? []));
    c = Object.getPrototypeOf(c) as unknown;
  }
  return all;
}

/** Every variable `configClass` reads, test-only ones included, in declaration order. */
export function declaredVariables(configClass: new () => object): DeclaredVariable[] {
  return declarationsOf(configClass).map(
    ({ name, required, secret, testOnly, default: value }) => ({
      name,
      required,
      secret,
      testOnly,
      default: value,
    }),
  );
}

/**
 * The names an operator may set, as docs/reference.md and the env example must list them: each secret
 * followed by its NAME_FILE form; test-only hooks left out.
 */
export function variableNames(configClass: new () => object): string[] {
  return declaredVariables(configClass)
    .filter((variable) => !variable.testOnly)
    .flatMap(({ name, secret }) => (secret ? [name, `${name}_FILE`] : [name]));
}

/**
 * Reads a daemon's VM_* variables into a new `configClass`, whose fields declare them with
 * `@EnvironmentVariable`, validating them once: an empty variable counts as unset, and one
 * error names every missing and every invalid variable. A secret given as NAME_FILE is read
 * from that file and then validated as if given directly.
 */
export function readEnvironment<C extends object>(
  configClass: new () => C,
  env: NodeJS.ProcessEnv,
): C {
  const declarations = declarationsOf(configClass);
  const given: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith('VM_') && value !== undefined && value.trim() !== '') {
      given[name] = value.trim();
    }
  }
  const problems: string[] = [];
  const fromFile = new Set<string>();
  for (const { name } of declarations.filter((declared) => declared.secret)) {
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
  const missing = declarations
    .filter((declared) => declared.required && given[declared.name] === undefined)
    .map((declared) => declared.name);
  // An unset variable is not validated: it is missing (if required) or takes its default.
  const invalid = declarations.flatMap(({ name, validation }) =>
    given[name] === undefined
      ? []
      : validateSync(Object.assign(new validation(), { [name]: given[name] })).flatMap((error) =>
          Object.values(error.constraints ?? {}).map((message) =>
            fromFile.has(name) ? `${message} (read from ${name}_FILE)` : message,
          ),
        ),
  );
  if (missing.length > 0) {
    problems.unshift(`missing required environment variable(s): ${missing.join(', ')}`);
  }
  problems.push(...invalid);
  if (problems.length > 0) throw new ConfigurationError(problems.join('; '));

  const config = new configClass();
  for (const { name, field, read, default: unset } of declarations) {
    const value = given[name];
    (config as Record<string, unknown>)[field] =
      value === undefined ? unset : read ? read(value) : value;
  }
  return config;
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
    if (content === '') return { problem: 'it is empty' };
    // Judged on the open file, so the file judged is the file read.
    const stats = fstatSync(fd);
    const exposure = inServiceCredentials(path, stats) ? undefined : exposureOf(stats.mode);
    return exposure === undefined ? content : { problem: exposure };
  } catch (error) {
    return { problem: describeFileError(error) };
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether the file is one systemd handed this service (LoadCredential=): under
 * $CREDENTIALS_DIRECTORY, a folder closed to others, owned by root or this user and writable by
 * neither group nor others. systemd 257 (Debian 13) gives a service that is not root its
 * credentials as root:root 0440 in a 0550 folder, read through an ACL: group-readable, yet no
 * one else's.
 */
function inServiceCredentials(path: string, file: Stats): boolean {
  const folder = process.env.CREDENTIALS_DIRECTORY;
  if (!folder || !isAbsolute(folder)) return false;
  try {
    const realFolder = realpathSync(folder);
    if (!realpathSync(path).startsWith(`${realFolder}/`)) return false;
    if ((statSync(realFolder).mode & 0o007) !== 0) return false;
  } catch {
    return false;
  }
  const owner = file.uid === 0 || file.uid === process.getuid?.();
  return owner && (file.mode & 0o022) === 0 && (file.mode & 0o007) === 0;
}

/**
 * Why a secret file's permissions refuse it, as ssh refuses a private key: any access for group
 * or others, even one it does not need, says others may have the token. Undefined when only its
 * owner may use it.
 */
function exposureOf(mode: number): string | undefined {
  const groupOrOthers = mode & 0o077;
  if (groupOrOthers === 0) return undefined;
  const octal = `0${(mode & 0o777).toString(8).padStart(3, '0')}`;
  const access = groupOrOthers & 0o044 ? 'readable by' : 'open to';
  return `it is ${access} group or others (mode ${octal}); chmod 600 it`;
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

/**
 * A bearer token variable: 16 (or `minLength`) to 1024 characters a header carries as is. Its
 * message names `variable`, by default the validated property (the variable, under
 * `@EnvironmentVariable`).
 */
export function IsBearerToken(
  variable = '$property',
  minLength = MIN_TOKEN_LENGTH,
): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isBearerToken',
      validator: {
        validate: (value: unknown) =>
          typeof value === 'string' &&
          value.length >= minLength &&
          value.length <= MAX_TOKEN_LENGTH &&
          B64TOKEN.test(value),
      },
    },
    {
      message: `${variable} must be ${minLength} to ${MAX_TOKEN_LENGTH} characters of A-Z a-z 0-9 - . _ ~ + / (and = at the end), such as the output of \`openssl rand -hex 32\``,
    },
  );
}

/**
 * Neither daemon takes flags: every argument is refused, pointing at the environment and listing
 * the variables `configClass` declares (required ones first; test-only hooks left out).
 */
export function refuseArguments(
  program: string,
  args: readonly string[],
  configClass: new () => object,
): void {
  if (args.length > 0) {
    const operatorVariables = declaredVariables(configClass).filter((v) => !v.testOnly);
    const listed = [
      ...operatorVariables.filter((v) => v.required),
      ...operatorVariables.filter((v) => !v.required),
    ].flatMap(({ name, secret, required }) =>
      (secret ? [name, `${name}_FILE`] : [name]).map((listedName) =>
        required ? listedName : `${listedName} (optional)`,
      ),
    );
    throw new ConfigurationError(
      `${program} takes no arguments (got ${args.length}); configure it with environment variables: ${listed.join(', ')}`,
    );
  }
}
