import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IsOptional } from 'class-validator';
import { ConfigurationError, IsBearerToken, readEnvironment } from './environment';

class TokenEnvironment {
  @IsOptional()
  @IsBearerToken('VM_TEST_TOKEN')
  VM_TEST_TOKEN?: string;
}

const TOKEN = '0f1e2d3c4b5a69788796a5b4c3d2e1f0';

function read(env: NodeJS.ProcessEnv): Record<string, string> {
  return readEnvironment(TokenEnvironment, env, [], ['VM_TEST_TOKEN']);
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

  function secretFile(name: string, content: string | Buffer): string {
    const path = join(dir, name);
    writeFileSync(path, content, { mode: 0o600 });
    return path;
  }

  it('takes it from the variable', () => {
    expect(read({ VM_TEST_TOKEN: TOKEN }).VM_TEST_TOKEN).toBe(TOKEN);
  });

  it('takes it from the file VM_TEST_TOKEN_FILE names, trailing newline trimmed', () => {
    const given = read({ VM_TEST_TOKEN_FILE: secretFile('token', `${TOKEN}\n`) });
    expect(given.VM_TEST_TOKEN).toBe(TOKEN);
    expect(given.VM_TEST_TOKEN_FILE).toBeUndefined();
  });

  it('leaves it unset when neither is given', () => {
    expect(read({}).VM_TEST_TOKEN).toBeUndefined();
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
      expect(read({ VM_TEST_TOKEN: token }).VM_TEST_TOKEN).toBe(token);
    } else {
      const message = errorOf({ VM_TEST_TOKEN: token });
      expect(message).toMatch(/^VM_TEST_TOKEN must be/);
      expect(message).not.toContain(token);
    }
  });
});
