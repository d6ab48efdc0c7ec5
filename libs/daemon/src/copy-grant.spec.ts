import {
  COPY_GRANT_CONTEXT,
  MOVE_GRANT_CONTEXT,
  grantExpiryOf,
  grantMac,
  signCopyGrant,
  verifyCopyGrant,
} from './copy-grant';
import { COPY_READ_GRANT_CONTEXT, verifyCopyReadGrant } from './copy-read-grant';

const GRANT = { vm: 'vm-0123456789abcdef', source: 'node-a', peer: 'node-b', expiresAtMs: 2_000 };

describe('copy grants', () => {
  const grant = GRANT;

  it('is taken by the peer it names, with the token it was signed with, until it expires', () => {
    const signed = signCopyGrant('token-b', grant);
    expect(verifyCopyGrant('token-b', 'node-b', signed, 1_999)).toEqual(grant);
    expect(verifyCopyGrant('token-b', 'node-b', signed, 2_000)).toEqual({
      refused: 'grant expired',
    });
  });

  it('is refused by another node, or with another token, or altered', () => {
    const signed = signCopyGrant('token-b', grant);
    expect(verifyCopyGrant('token-c', 'node-c', signed, 0)).toEqual({
      refused: 'grant not signed for this node',
    });
    expect(verifyCopyGrant('token-b', 'node-c', signed, 0)).toEqual({
      refused: 'grant for another node',
    });
    const forged = Buffer.from(
      JSON.stringify({ v: 1, vm: 'vm-x', src: 'node-a', peer: 'node-b', exp: 9e15 }),
    ).toString('base64url');
    expect(verifyCopyGrant('token-b', 'node-b', `${forged}.${signed.split('.')[1]}`, 0)).toEqual({
      refused: 'grant not signed for this node',
    });
    expect(verifyCopyGrant('token-b', 'node-b', 'nodot', 0)).toEqual({
      refused: 'malformed grant',
    });
  });

  it('is refused as malformed, by either kind, when its signed payload is not a JSON object', () => {
    for (const text of ['null', '7', 'not json']) {
      const payload = Buffer.from(text).toString('base64url');
      const signed = (context: string) => `${payload}.${grantMac(context, 'token-b', payload)}`;
      expect(verifyCopyGrant('token-b', 'node-b', signed(COPY_GRANT_CONTEXT), 0)).toEqual({
        refused: 'malformed grant',
      });
      expect(verifyCopyReadGrant('token-b', 'node-b', signed(COPY_READ_GRANT_CONTEXT), 0)).toEqual({
        refused: 'malformed grant',
      });
    }
  });
});

describe('copy grants: issued-at', () => {
  it('carries the moment it was issued, when given (a grant without it reads as before)', () => {
    const grant = {
      vm: 'vm-0123456789abcdef',
      source: 'node-a',
      peer: 'node-b',
      expiresAtMs: 2_000,
      issuedAtMs: 1_500,
    };
    expect(verifyCopyGrant('token-b', 'node-b', signCopyGrant('token-b', grant), 0)).toEqual(grant);
  });
});

describe('a grant read by its holder (grantExpiryOf)', () => {
  it('states when the peer will refuse it, signed with a token the holder does not have', () => {
    const signed = signCopyGrant('token-b', { ...GRANT, expiresAtMs: 5_000 }, MOVE_GRANT_CONTEXT);
    expect(grantExpiryOf(signed)).toBe(5_000);
  });

  it('states nothing for a grant without a readable expiry', () => {
    const payload = (fields: unknown) => Buffer.from(JSON.stringify(fields)).toString('base64url');
    for (const grant of [
      'g',
      '.mac',
      `${payload({ exp: '5000' })}.mac`,
      `${payload({ exp: null })}.mac`,
      `${payload(null)}.mac`,
      `${Buffer.from('not json').toString('base64url')}.mac`,
      `${payload({ exp: 5_000, pad: 'x'.repeat(1_100) })}.mac`,
      `${payload({ exp: 1e300 })}.mac`,
    ]) {
      expect(grantExpiryOf(grant)).toBeUndefined();
    }
  });
});
