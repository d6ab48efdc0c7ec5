import { execFileSync } from 'node:child_process';
import { validateSync } from 'class-validator';
import { IsNodeSecret, deriveNodeToken } from './node-token';

describe('deriveNodeToken', () => {
  const secret = 'a'.repeat(32) + '-fleet-secret';

  it('is the unpadded base64url HMAC-SHA256 that openssl computes from the docs/securing.md one-liner', () => {
    const expected = execFileSync(
      'sh',
      [
        '-c',
        'printf "%s" "ppn-node-token:v1:$1" | openssl dgst -sha256 -hmac "$2" -binary | openssl base64 -A | tr "+/" "-_" | tr -d "="',
        'sh',
        'node-a',
        secret,
      ],
      { encoding: 'utf8' },
    );
    expect(deriveNodeToken(secret, 'node-a')).toBe(expected);
    expect(expected).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('differs per node and per secret', () => {
    const a = deriveNodeToken(secret, 'node-a');
    expect(deriveNodeToken(secret, 'node-b')).not.toBe(a);
    expect(deriveNodeToken(secret + 'x', 'node-a')).not.toBe(a);
    expect(deriveNodeToken(secret, 'node-a')).toBe(a);
  });
});

describe('IsNodeSecret', () => {
  class Holder {
    @IsNodeSecret()
    VM_FLEET_NODE_SECRET!: string;
  }
  const problems = (value: string): string[] =>
    validateSync(Object.assign(new Holder(), { VM_FLEET_NODE_SECRET: value })).flatMap((error) =>
      Object.values(error.constraints ?? {}),
    );

  it('takes 32 characters or more of a bearer token, naming the variable otherwise', () => {
    expect(problems('a'.repeat(32))).toEqual([]);
    expect(problems('a'.repeat(31))).toEqual([
      expect.stringMatching(/^VM_FLEET_NODE_SECRET must be 32 to 1024 characters/),
    ]);
    expect(problems('a'.repeat(31) + ' ')).toHaveLength(1);
  });
});
