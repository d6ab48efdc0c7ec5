import { signCopyGrant, verifyCopyGrant } from './copy-grant';
import { signCopyReadGrant, verifyCopyReadGrant } from './copy-read-grant';

describe('copy read grants', () => {
  const grant = {
    vm: 'vm-0123456789abcdef',
    holder: 'node-b',
    reader: 'node-c',
    issuedAtMs: 1_000,
    expiresAtMs: 2_000,
    moves: true,
  };

  it('is taken by the holder it names, with its token, until it expires', () => {
    const signed = signCopyReadGrant('token-b', grant);
    expect(verifyCopyReadGrant('token-b', 'node-b', signed, 1_999)).toEqual(grant);
    expect(verifyCopyReadGrant('token-b', 'node-b', signed, 2_000)).toEqual({
      refused: 'grant expired',
    });
  });

  it('is refused by another node, with another token (a hostile node signing its own), or altered', () => {
    const signed = signCopyReadGrant('token-b', grant);
    expect(verifyCopyReadGrant('token-c', 'node-b', signed, 0)).toEqual({
      refused: 'grant not signed for this node',
    });
    expect(verifyCopyReadGrant('token-b', 'node-c', signed, 0)).toEqual({
      refused: 'grant for another node',
    });
    const altered = Buffer.from(
      JSON.stringify({ v: 1, vm: 'vm-x', holder: 'node-b', reader: 'node-c', iat: 0, exp: 9e15 }),
    ).toString('base64url');
    expect(
      verifyCopyReadGrant('token-b', 'node-b', `${altered}.${signed.split('.')[1]}`, 0),
    ).toEqual({
      refused: 'grant not signed for this node',
    });
  });

  it('is no copy grant, and a copy grant is no read grant (each signed in its own context)', () => {
    const read = signCopyReadGrant('token-b', grant);
    expect(verifyCopyGrant('token-b', 'node-b', read, 0)).toEqual({
      refused: 'grant not signed for this node',
    });
    const write = signCopyGrant('token-b', {
      vm: grant.vm,
      source: 'node-a',
      peer: 'node-b',
      expiresAtMs: 2_000,
    });
    expect(verifyCopyReadGrant('token-b', 'node-b', write, 0)).toEqual({
      refused: 'grant not signed for this node',
    });
  });
});
