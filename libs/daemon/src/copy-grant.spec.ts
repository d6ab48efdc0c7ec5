import { COPY_GRANT_CONTEXT, grantMac, signCopyGrant, verifyCopyGrant } from './copy-grant';
import { COPY_READ_GRANT_CONTEXT, verifyCopyReadGrant } from './copy-read-grant';

describe('copy grants', () => {
  const grant = { vm: 'vm-0123456789abcdef', source: 'node-a', peer: 'node-b', expiresAtMs: 2_000 };

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
