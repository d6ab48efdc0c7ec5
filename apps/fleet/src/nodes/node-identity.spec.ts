import { Logger } from '@nestjs/common';
import { deriveNodeToken } from '@app/daemon';
import { FakeClock } from '../../../../test/support/fake-clock';
import { NodeHeartbeat } from '@app/fleet-domain';
import { heartbeat as agentHeartbeat } from '../../../../test/support/heartbeats';
import { FleetMetrics } from '../metrics/fleet-metrics.service';
import { InMemoryNodesRepository } from './memory/in-memory-nodes.repository';
import { NodeTokens } from './node-tokens';
import { NotThisNodesTokenError } from './nodes.errors';
import { NodesService } from './nodes.service';

/** A node at a mesh address (a loopback wg_ip is taken only over loopback, not in-process). */
const heartbeat = (fields: Partial<NodeHeartbeat> & { node_id: string }): NodeHeartbeat =>
  agentHeartbeat({ wg_ip: '10.8.0.1', ...fields });

const SECRET = 'fleet-secret-0123456789abcdef0123456789';
const PREVIOUS = 'fleet-secret-previous-fedcba9876543210ab';
const SHARED = 'shared-node-token-4c2e9a71';

/** NodesService's per-node check: a heartbeat speaks for its own node_id only. */
describe('NodesService with per-node tokens', () => {
  let repository: InMemoryNodesRepository;
  let warnings: string[];
  let logs: string[];

  let clock: FakeClock;

  function service(tokens: NodeTokens): NodesService {
    return new NodesService(repository, clock, new FleetMetrics(), tokens);
  }

  /** The credential stored with the node: the kind its agent is called with. */
  const credentialOf = async (nodeId: string) => (await repository.findLive(nodeId, 0))?.credential;

  beforeEach(() => {
    clock = new FakeClock();
    repository = new InMemoryNodesRepository();
    warnings = [];
    logs = [];
    jest.spyOn(Logger.prototype, 'log').mockImplementation((message: unknown) => {
      logs.push(String(message));
    });
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => {
      warnings.push(String(message));
    });
  });

  afterEach(() => jest.restoreAllMocks());

  it("takes node A's heartbeat with A's token", async () => {
    const nodes = service(new NodeTokens({ secret: SECRET }));
    await expect(
      nodes.acceptHeartbeat(heartbeat({ node_id: 'node-a' }), deriveNodeToken(SECRET, 'node-a')),
    ).resolves.toEqual({ accepted: true });
    expect((await nodes.getNode('node-a')).node_id).toBe('node-a');
    expect(await credentialOf('node-a')).toBe('own');
    expect(warnings).toEqual([]);
  });

  it('warns of refused heartbeats at most once a minute, naming the node and the address, never the token', async () => {
    const nodes = service(new NodeTokens({ secret: SECRET }));
    const stolen = deriveNodeToken(SECRET, 'node-a');
    for (let each = 0; each < 5; each++) {
      await expect(
        nodes.acceptHeartbeat(heartbeat({ node_id: `node-${each}` }), stolen, '10.0.0.9'),
      ).rejects.toThrow(NotThisNodesTokenError);
      clock.advance(10_000);
    }
    expect(warnings).toEqual([
      expect.stringMatching(/^heartbeat for node node-0 from 10\.0\.0\.9 refused: /),
    ]);
    clock.advance(20_000);
    await expect(
      nodes.acceptHeartbeat(heartbeat({ node_id: 'node-b' }), SECRET, '10.0.0.7'),
    ).rejects.toThrow(NotThisNodesTokenError);
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toMatch(
      /^heartbeat for node node-b from 10\.0\.0\.7 refused: .*; 4 more refused since the last such warning/,
    );
    for (const line of warnings) {
      expect(line).not.toContain(stolen);
      expect(line).not.toContain(SECRET);
    }
  });

  it.each([
    ["node A's token", deriveNodeToken(SECRET, 'node-a')],
    ['the secret itself', SECRET],
    ['no token', undefined],
    ['a token under another secret', deriveNodeToken(PREVIOUS, 'node-b')],
  ])(
    "refuses node B's heartbeat with %s before the store is touched, never echoing it",
    async (_what, token) => {
      const nodes = service(new NodeTokens({ secret: SECRET }));
      const update = jest.spyOn(repository, 'update');
      const read = jest.spyOn(repository, 'findLive');
      const refusal = nodes.acceptHeartbeat(heartbeat({ node_id: 'node-b' }), token);
      await expect(refusal).rejects.toThrow(NotThisNodesTokenError);
      await expect(refusal).rejects.toThrow(/^the bearer token does not belong to node node-b: /);
      if (token) await expect(refusal).rejects.not.toThrow(token);
      expect(update).not.toHaveBeenCalled();
      expect(read).not.toHaveBeenCalled();
      expect(await repository.listLive(0)).toEqual([]);
    },
  );

  it('without a secret, leaves the token to the guard (the shared token, or open)', async () => {
    const nodes = service(new NodeTokens({ sharedToken: SHARED }));
    await expect(nodes.acceptHeartbeat(heartbeat({ node_id: 'node-b' }))).resolves.toEqual({
      accepted: true,
    });
    expect(await credentialOf('node-b')).toBe('shared');
    const open = service(new NodeTokens());
    await open.acceptHeartbeat(heartbeat({ node_id: 'node-c' }));
    expect(await credentialOf('node-c')).toBeNull();
  });

  it('migrating, takes the shared token from any node and says once which nodes still use it', async () => {
    const nodes = service(new NodeTokens({ secret: SECRET, sharedToken: SHARED }));
    await nodes.acceptHeartbeat(heartbeat({ node_id: 'node-a' }), SHARED);
    await nodes.acceptHeartbeat(heartbeat({ node_id: 'node-a' }), SHARED);
    await nodes.acceptHeartbeat(
      heartbeat({ node_id: 'node-b' }),
      deriveNodeToken(SECRET, 'node-b'),
    );
    expect(warnings).toEqual([
      expect.stringMatching(/^node node-a heartbeats with the shared VM_FLEET_NODE_TOKEN/),
    ]);
    expect(warnings.join('\n')).not.toContain(SHARED);
    expect(await credentialOf('node-a')).toBe('shared');
    expect(await credentialOf('node-b')).toBe('own');
    await nodes.acceptHeartbeat(
      heartbeat({ node_id: 'node-a' }),
      deriveNodeToken(SECRET, 'node-a'),
    );
    expect(await credentialOf('node-a')).toBe('own');
    // Whoever holds the shared token may still speak for node-a: that is all it is recorded as.
    await nodes.acceptHeartbeat(heartbeat({ node_id: 'node-a', wg_ip: '10.0.0.66' }), SHARED);
    expect(await credentialOf('node-a')).toBe('shared');
    expect(logs.filter((line) => line.includes('own token'))).toEqual([
      'node node-a now heartbeats with its own token',
    ]);
  });

  it("rotating, takes a node's token under the previous secret for that node only", async () => {
    const nodes = service(new NodeTokens({ secret: SECRET, previousSecret: PREVIOUS }));
    const old = deriveNodeToken(PREVIOUS, 'node-a');
    await expect(nodes.acceptHeartbeat(heartbeat({ node_id: 'node-a' }), old)).resolves.toEqual({
      accepted: true,
    });
    expect(await credentialOf('node-a')).toBe('previous-secret');
    await expect(nodes.acceptHeartbeat(heartbeat({ node_id: 'node-b' }), old)).rejects.toThrow(
      NotThisNodesTokenError,
    );
    expect(warnings).toEqual([
      expect.stringMatching(
        /^node node-a heartbeats with its token under VM_FLEET_NODE_SECRET_PREVIOUS/,
      ),
      expect.stringMatching(/^heartbeat for node node-b from an unknown address refused/),
    ]);
  });
});
