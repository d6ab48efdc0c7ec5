import { deriveNodeToken } from '@app/daemon';
import { NodeTokens } from './node-tokens';

const SECRET = 'fleet-secret-0123456789abcdef0123456789';
const PREVIOUS = 'fleet-secret-previous-fedcba9876543210ab';
const SHARED = 'shared-node-token-4c2e9a71';

describe('NodeTokens', () => {
  it('without a secret: no per-node check, agents get the shared token or none', () => {
    expect(new NodeTokens().perNode).toBe(false);
    expect(new NodeTokens().forAgent('node-a')).toEqual([]);
    expect(new NodeTokens({ sharedToken: SHARED }).forAgent('node-a')).toEqual([SHARED]);
    expect(new NodeTokens({ sharedToken: SHARED }).transitionWarnings()).toEqual([]);
  });

  it("with a secret: takes a node's own token for that node only, never the secret itself", () => {
    const tokens = new NodeTokens({ secret: SECRET });
    const a = deriveNodeToken(SECRET, 'node-a');
    expect(tokens.perNode).toBe(true);
    expect(tokens.identify('node-a', a)).toBe('own');
    expect(tokens.identify('node-b', a)).toBeUndefined();
    expect(tokens.identify('node-a', SECRET)).toBeUndefined();
    expect(tokens.identify('node-a', deriveNodeToken(PREVIOUS, 'node-a'))).toBeUndefined();
    expect(tokens.identify('node-a', a.slice(0, -1))).toBeUndefined();
    expect(tokens.forAgent('node-a')).toEqual([a]);
    expect(tokens.transitionWarnings()).toEqual([]);
  });

  it('migrating: the shared token is taken from any node, and agents get their own token first', () => {
    const tokens = new NodeTokens({ secret: SECRET, sharedToken: SHARED });
    expect(tokens.identify('node-a', SHARED)).toBe('shared');
    expect(tokens.identify('node-b', SHARED)).toBe('shared');
    expect(tokens.identify('node-a', deriveNodeToken(SECRET, 'node-a'))).toBe('own');
    expect(tokens.identify('node-b', deriveNodeToken(SECRET, 'node-a'))).toBeUndefined();
    expect(tokens.forAgent('node-a')).toEqual([deriveNodeToken(SECRET, 'node-a'), SHARED]);
    expect(tokens.transitionWarnings()).toEqual([
      expect.stringMatching(/^migrating to per-node tokens: .*unset it once every node/),
    ]);
  });

  it("rotating: a node's token under the previous secret is taken for that node only", () => {
    const tokens = new NodeTokens({ secret: SECRET, previousSecret: PREVIOUS });
    const old = deriveNodeToken(PREVIOUS, 'node-a');
    expect(tokens.identify('node-a', old)).toBe('previous-secret');
    expect(tokens.identify('node-b', old)).toBeUndefined();
    expect(tokens.identify('node-a', PREVIOUS)).toBeUndefined();
    expect(tokens.forAgent('node-a')).toEqual([deriveNodeToken(SECRET, 'node-a'), old]);
    expect(tokens.transitionWarnings()).toEqual([
      expect.stringMatching(/^rotating the node secret: .*VM_FLEET_NODE_SECRET_PREVIOUS/),
    ]);
  });

  it('never puts a secret in what it says', () => {
    const tokens = new NodeTokens({
      secret: SECRET,
      previousSecret: PREVIOUS,
      sharedToken: SHARED,
    });
    for (const warning of tokens.transitionWarnings()) {
      for (const secret of [SECRET, PREVIOUS, SHARED]) expect(warning).not.toContain(secret);
    }
  });
});
