import { deriveNodeToken } from '@app/daemon';
import { NodeTokens } from './node-tokens';

const SECRET = 'fleet-secret-0123456789abcdef0123456789';
const PREVIOUS = 'fleet-secret-previous-fedcba9876543210ab';
const SHARED = 'shared-node-token-4c2e9a71';

describe('NodeTokens', () => {
  it('without a secret: no per-node check, agents get the shared token or none', () => {
    const open = new NodeTokens();
    expect(open.perNode).toBe(false);
    expect(open.sharedCredential).toBeNull();
    for (const credential of [null, 'shared', 'own', 'previous-secret'] as const) {
      expect(open.forAgent('node-a', credential)).toEqual({ token: undefined });
    }
    const shared = new NodeTokens({ sharedToken: SHARED });
    expect(shared.sharedCredential).toBe('shared');
    expect(shared.forAgent('node-a', 'shared')).toEqual({ token: SHARED });
    // Recorded by an open or older controller: the shared token is what it checked.
    expect(shared.forAgent('node-a', null)).toEqual({ token: SHARED });
    // Recorded by a controller with the secret: the node may hold its own token only.
    expect(shared.forAgent('node-a', 'own')).toEqual({ unusable: expect.any(String) });
    expect(shared.transitionWarnings()).toEqual([]);
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
    expect(tokens.forAgent('node-a', 'own')).toEqual({ token: a });
    for (const credential of [null, 'shared', 'previous-secret'] as const) {
      expect(tokens.forAgent('node-a', credential)).toEqual({ unusable: expect.any(String) });
    }
    expect(tokens.transitionWarnings()).toEqual([]);
  });

  it('migrating: the shared token is taken from any node, and each agent gets the kind it heartbeated with', () => {
    const tokens = new NodeTokens({ secret: SECRET, sharedToken: SHARED });
    expect(tokens.identify('node-a', SHARED)).toBe('shared');
    expect(tokens.identify('node-b', SHARED)).toBe('shared');
    expect(tokens.identify('node-a', deriveNodeToken(SECRET, 'node-a'))).toBe('own');
    expect(tokens.identify('node-b', deriveNodeToken(SECRET, 'node-a'))).toBeUndefined();
    expect(tokens.forAgent('node-a', 'own')).toEqual({ token: deriveNodeToken(SECRET, 'node-a') });
    // A node seen only with the shared token is never sent its own, and the reverse.
    expect(tokens.forAgent('node-a', 'shared')).toEqual({ token: SHARED });
    expect(tokens.forAgent('node-a', null)).toEqual({ unusable: expect.any(String) });
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
    expect(tokens.forAgent('node-a', 'previous-secret')).toEqual({ token: old });
    expect(tokens.forAgent('node-a', 'own')).toEqual({ token: deriveNodeToken(SECRET, 'node-a') });
    expect(tokens.forAgent('node-a', 'shared')).toEqual({ unusable: expect.any(String) });
    // Once the previous secret is gone, a node still recorded on it is not called.
    expect(new NodeTokens({ secret: SECRET }).forAgent('node-a', 'previous-secret')).toEqual({
      unusable: expect.any(String),
    });
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
    const said = [
      ...tokens.transitionWarnings(),
      ...(['own', 'previous-secret', 'shared', null] as const).map((credential) => {
        const auth = new NodeTokens().forAgent('node-a', credential);
        return 'unusable' in auth ? auth.unusable : '';
      }),
      new NodeTokens({ secret: SECRET }).forAgent('node-a', 'shared'),
    ].map((each) => JSON.stringify(each));
    for (const line of said) {
      for (const secret of [SECRET, PREVIOUS, SHARED]) expect(line).not.toContain(secret);
    }
  });
});
