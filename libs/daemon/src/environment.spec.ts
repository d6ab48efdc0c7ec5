import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Matches } from 'class-validator';
import {
  ConfigurationError,
  EnvironmentVariable,
  IsBearerToken,
  declaredVariables,
  readEnvironment,
  refuseArguments,
  variableNames,
} from './environment';

class TokenConfig {
  @EnvironmentVariable('VM_TEST_TOKEN', { secret: true, validate: IsBearerToken() })
  token?: string;
}

const TOKEN = '0f1e2d3c4b5a69788796a5b4c3d2e1f0';

function read(env: NodeJS.ProcessEnv): TokenConfig {
  return readEnvironment(TokenConfig, env);
}

function errorOf(env: NodeJS.ProcessEnv): string {
  try {
    read(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return (error as Error).message;
  }
  throw new Error('expected a configuration error');
}

describe('readEnvironment with a secret', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ppn-secret-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function secretFile(name: string, content: string | Buffer, mode = 0o600): string {
    const path = join(dir, name);
    writeFileSync(path, content);
    // Set after writing: the mode writeFileSync is given passes through the umask.
    chmodSync(path, mode);
    return path;
  }

  it('takes it from the variable', () => {
    expect(read({ VM_TEST_TOKEN: TOKEN }).token).toBe(TOKEN);
  });

  it('takes it from the file VM_TEST_TOKEN_FILE names, trailing newline trimmed', () => {
    const given = read({ VM_TEST_TOKEN_FILE: secretFile('token', `${TOKEN}\n`) });
    expect({ ...given }).toEqual({ token: TOKEN });
  });

  it('leaves it unset when neither is given', () => {
    expect(read({}).token).toBeUndefined();
  });

  it('refuses both at once', () => {
    expect(errorOf({ VM_TEST_TOKEN: TOKEN, VM_TEST_TOKEN_FILE: secretFile('both', TOKEN) })).toBe(
      'set VM_TEST_TOKEN or VM_TEST_TOKEN_FILE, not both',
    );
  });

  it.each([
    ['a missing file', () => join(dir, 'missing'), 'cannot read it (ENOENT)'],
    ['a directory', () => dir, 'cannot read it (EISDIR)'],
    ['an empty file', () => secretFile('empty', '\n'), 'it is empty'],
    [
      'a huge file',
      () => secretFile('huge', Buffer.alloc(5000, 'a')),
      'it holds more than 4096 bytes',
    ],
  ])('refuses %s, naming the variable but not the path', (_, path, problem) => {
    const file = path();
    const message = errorOf({ VM_TEST_TOKEN_FILE: file });
    expect(message).toBe(`VM_TEST_TOKEN_FILE names a file that cannot be used: ${problem}`);
    expect(message).not.toContain(file);
  });

  it.each(['0600', '0400'])('takes a file only its owner may use (mode %s)', (mode) => {
    const path = secretFile(`owner-${mode}`, TOKEN, parseInt(mode, 8));
    expect(read({ VM_TEST_TOKEN_FILE: path }).token).toBe(TOKEN);
  });

  it.each([
    ['0644', 'readable by'],
    ['0640', 'readable by'],
    ['0604', 'readable by'],
    ['0620', 'open to'],
    ['0601', 'open to'],
  ])('refuses a file group or others may use (mode %s), as ssh does a key', (mode, access) => {
    const path = secretFile(`open-${mode}`, TOKEN, parseInt(mode, 8));
    const message = errorOf({ VM_TEST_TOKEN_FILE: path });
    expect(message).toBe(
      `VM_TEST_TOKEN_FILE names a file that cannot be used: it is ${access} group or others (mode ${mode}); chmod 600 it`,
    );
    expect(message).not.toContain(TOKEN);
    expect(message).not.toContain(path);
  });

  describe("in systemd's credentials folder (LoadCredential=, $CREDENTIALS_DIRECTORY)", () => {
    let credentials: string;
    const before = process.env.CREDENTIALS_DIRECTORY;
    beforeEach(() => {
      credentials = mkdtempSync(join(dir, 'credentials-'));
      chmodSync(credentials, 0o550);
      process.env.CREDENTIALS_DIRECTORY = credentials;
    });
    afterEach(() => {
      chmodSync(credentials, 0o700);
      if (before === undefined) delete process.env.CREDENTIALS_DIRECTORY;
      else process.env.CREDENTIALS_DIRECTORY = before;
    });
    function credential(mode: number): string {
      chmodSync(credentials, 0o750);
      const path = join(credentials, 'token');
      writeFileSync(path, `${TOKEN}\n`, { mode });
      chmodSync(path, mode);
      chmodSync(credentials, 0o550);
      return path;
    }

    it('takes the group-readable file systemd 257 hands a service that is not root (0440)', () => {
      expect(read({ VM_TEST_TOKEN_FILE: credential(0o440) }).token).toBe(TOKEN);
    });

    it.each([
      ['others may read it', 0o444, 0o550, 'readable by'],
      ['its group may write it', 0o460, 0o550, 'readable by'],
      ['the folder is open to others', 0o440, 0o555, 'readable by'],
    ])('still refuses it when %s', (_, mode, folderMode, access) => {
      const path = credential(mode);
      chmodSync(credentials, folderMode);
      expect(errorOf({ VM_TEST_TOKEN_FILE: path })).toContain(`it is ${access} group or others`);
    });

    it('refuses a 0440 file elsewhere, whatever $CREDENTIALS_DIRECTORY says', () => {
      const path = secretFile('elsewhere', TOKEN, 0o440);
      expect(errorOf({ VM_TEST_TOKEN_FILE: path })).toContain('it is readable by group or others');
    });
  });

  it('validates a token read from a file as if given directly, never echoing it', () => {
    const message = errorOf({ VM_TEST_TOKEN_FILE: secretFile('short', 'tenchars10\n') });
    expect(message).toMatch(/^VM_TEST_TOKEN must be 16 to 1024 characters/);
    expect(message).toContain('(read from VM_TEST_TOKEN_FILE)');
    expect(message).not.toContain('tenchars10');
  });
});

describe('IsBearerToken', () => {
  it.each([
    ['16 characters', '0123456789abcdef', true],
    ['hex from openssl rand -hex 32', TOKEN, true],
    ['base64 with padding', 'q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJ+/0=', true],
    ['15 characters', '0123456789abcde', false],
    ['a space inside', '0123456789 abcdef', false],
    ['a quote', '0123456789abcdef"', false],
    ['= inside', '01234567=89abcdef', false],
    ['over 1024 characters', 'a'.repeat(1025), false],
  ])('%s: %s', (_, token, accepted) => {
    if (accepted) {
      expect(read({ VM_TEST_TOKEN: token }).token).toBe(token);
    } else {
      const message = errorOf({ VM_TEST_TOKEN: token });
      expect(message).toMatch(/^VM_TEST_TOKEN must be/);
      expect(message).not.toContain(token);
    }
  });
});

const digits = (): PropertyDecorator => Matches(/^\d+$/, { message: '$property must be digits' });

class SharedConfig {
  @EnvironmentVariable('VM_TEST_SHARED', {
    validate: Matches(/^a+$/, { message: '$property must be a run of a' }),
  })
  shared?: string;
}

class AppConfig extends SharedConfig {
  @EnvironmentVariable('VM_TEST_FIRST', { required: true, validate: digits(), read: Number })
  first!: number;

  @EnvironmentVariable('VM_TEST_HOOK', {
    testOnly: true,
    validate: Matches(/^on$/, { message: '$property must be on' }),
  })
  hook?: string;

  @EnvironmentVariable('VM_TEST_SECOND', { validate: digits(), read: Number, default: 7 })
  second!: number;

  @EnvironmentVariable('VM_TEST_SECRET', { secret: true, validate: IsBearerToken() })
  secret?: string;

  @EnvironmentVariable('VM_TEST_LAST', { required: true, validate: digits() })
  last!: string;
}

describe('EnvironmentVariable', () => {
  function errorOfApp(env: NodeJS.ProcessEnv): string {
    try {
      readEnvironment(AppConfig, env);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigurationError);
      return (error as Error).message;
    }
    throw new Error('expected a configuration error');
  }

  it('fills each field from its variable, read and trimmed, or with its default when unset', () => {
    const config = readEnvironment(AppConfig, {
      VM_TEST_FIRST: ' 12 ',
      VM_TEST_SECOND: '',
      VM_TEST_LAST: '3',
      VM_TEST_SHARED: 'aa',
      OTHER: 'ignored',
    });
    expect(config).toBeInstanceOf(AppConfig);
    expect({ ...config }).toEqual({ first: 12, second: 7, last: '3', shared: 'aa' });
  });

  it('names every missing variable first, then every invalid one (inherited last), never a value', () => {
    expect(errorOfApp({ VM_TEST_SECOND: 'x9', VM_TEST_SHARED: 'b', VM_TEST_HOOK: 'off' })).toBe(
      'missing required environment variable(s): VM_TEST_FIRST, VM_TEST_LAST; VM_TEST_HOOK must be on; VM_TEST_SECOND must be digits; VM_TEST_SHARED must be a run of a',
    );
  });

  it('lists what an operator may set, a secret with its _FILE form, test-only hooks left out', () => {
    expect(variableNames(AppConfig)).toEqual([
      'VM_TEST_FIRST',
      'VM_TEST_SECOND',
      'VM_TEST_SECRET',
      'VM_TEST_SECRET_FILE',
      'VM_TEST_LAST',
      'VM_TEST_SHARED',
    ]);
    expect(declaredVariables(AppConfig).filter((v) => v.testOnly)).toEqual([
      { name: 'VM_TEST_HOOK', required: false, secret: false, testOnly: true, default: undefined },
    ]);
    expect(declaredVariables(AppConfig).find((v) => v.name === 'VM_TEST_SECOND')?.default).toBe(7);
  });

  it('refuses arguments listing the required variables first, then the optional ones', () => {
    expect(() => refuseArguments('service-test', ['--x'], AppConfig)).toThrow(
      new ConfigurationError(
        'service-test takes no arguments (got 1); configure it with environment variables: VM_TEST_FIRST, VM_TEST_LAST, VM_TEST_SECOND (optional), VM_TEST_SECRET (optional), VM_TEST_SECRET_FILE (optional), VM_TEST_SHARED (optional)',
      ),
    );
    expect(() => refuseArguments('service-test', [], AppConfig)).not.toThrow();
  });

  it('refuses a variable declared twice in one configuration', () => {
    expect(() => {
      class Twice extends SharedConfig {
        @EnvironmentVariable('VM_TEST_SHARED', { validate: digits() })
        again?: string;
      }
      return Twice;
    }).toThrow('VM_TEST_SHARED is declared twice in Twice');
  });

  it('accepts only a field that holds what the variable reads as (checked by the compiler)', () => {
    class Mismatched {
      // @ts-expect-error a number read into a string field
      @EnvironmentVariable('VM_TEST_NUMBER', { validate: digits(), read: Number })
      count?: string;
    }
    expect(variableNames(Mismatched)).toEqual(['VM_TEST_NUMBER']);
  });
});
