import { execFileSync } from 'node:child_process';
import { deriveNodeToken } from './node-token';
import { TenantTokens, deriveTenantToken } from './tenant-token';

describe('deriveTenantToken', () => {
  const secret = 't'.repeat(32) + '-tenant-secret';

  it('is the unpadded base64url HMAC-SHA256 that openssl computes from the docs/securing.md one-liner', () => {
    const expected = execFileSync(
      'sh',
      [
        '-c',
        'printf "%s" "ppn-tenant-token:v1:$1" | openssl dgst -sha256 -hmac "$2" -binary | openssl base64 -A | tr "+/" "-_" | tr -d "="',
        'sh',
        'acme',
        secret,
      ],
      { encoding: 'utf8' },
    );
    expect(deriveTenantToken(secret, 'acme')).toBe(expected);
    expect(expected).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('differs per tenant and per secret, and from the node token of the same id', () => {
    const acme = deriveTenantToken(secret, 'acme');
    expect(deriveTenantToken(secret, 'globex')).not.toBe(acme);
    expect(deriveTenantToken(secret + 'x', 'acme')).not.toBe(acme);
    expect(deriveNodeToken(secret, 'acme')).not.toBe(acme);
  });
});

describe('TenantTokens', () => {
  const secret = 's'.repeat(40);
  const tokens = new TenantTokens(secret, ['acme', 'globex']);

  it("finds the tenant of each one's token, and of no other", () => {
    expect(tokens.tenantOf(deriveTenantToken(secret, 'acme'))).toBe('acme');
    expect(tokens.tenantOf(deriveTenantToken(secret, 'globex'))).toBe('globex');
    // Derived right, but for a tenant the controller does not know.
    expect(tokens.tenantOf(deriveTenantToken(secret, 'initech'))).toBeUndefined();
    // Another secret's, the secret itself, a node token.
    expect(tokens.tenantOf(deriveTenantToken('o'.repeat(40), 'acme'))).toBeUndefined();
    expect(tokens.tenantOf(secret)).toBeUndefined();
    expect(tokens.tenantOf(deriveNodeToken(secret, 'acme'))).toBeUndefined();
    expect(tokens.tenantOf('')).toBeUndefined();
  });
});
