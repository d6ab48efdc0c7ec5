import {
  Daemon,
  FLEET_MAIN,
  ListedNode,
  enrolled,
  eventually,
  startAgent,
  stopAllDaemons,
} from '../support/daemons';
import { heartbeat } from '../support/heartbeats';
import { TestHost } from '../support/netns';
import { RedisServer } from '../support/redis-server';
import { scratchFolder } from '../support/scratch-folders';

jest.setTimeout(30_000);

/**
 * Two controllers on one Redis as the README runs them: real processes, each on a host of its
 * own (a network namespace of this test's) with the fixed port 9203, and a real agent.
 */
describe('two controller processes on one Redis', () => {
  let hostA: TestHost;
  let hostB: TestHost;
  let redis: RedisServer;
  let controllerA: Daemon;
  const diskDir = scratchFolder('two-controllers-');

  const controllerOn = async (host: TestHost): Promise<Daemon> => {
    const daemon = new Daemon(
      FLEET_MAIN,
      { VM_FLEET_REDIS_URL: `redis://${host.hostAddress}:${redis.port}` },
      [],
      [],
      host.name,
    );
    await daemon.waitForOutput(/listening on 0\.0\.0\.0:9203 \(state shared in Redis/);
    await daemon.waitForOutput(/Redis at .* connected/);
    return daemon;
  };

  const nodesOn = async (host: TestHost): Promise<ListedNode[]> =>
    (await fetch(`http://${host.address}:9203/v1/nodes`)).json() as Promise<ListedNode[]>;

  beforeAll(async () => {
    hostA = TestHost.create('ppn-test-a', 1);
    hostB = TestHost.create('ppn-test-b', 2);
    redis = await RedisServer.start(undefined, [hostA.hostAddress, hostB.hostAddress]);
    controllerA = await controllerOn(hostA);
    await controllerOn(hostB);
  });

  afterAll(async () => {
    await stopAllDaemons();
    await redis.stop();
    hostA.remove();
    hostB.remove();
  });

  it("refuses a loopback wg_ip from a node on another host (400 naming wg_ip): its calls would go to the controller's own services", async () => {
    const beat = (wg_ip: string) =>
      fetch(`http://${hostA.address}:9203/v1/nodes/heartbeat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(heartbeat({ node_id: 'squatter', wg_ip, spawn_port: 6379 })),
      });
    for (const wgIp of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) {
      const refused = await beat(wgIp);
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { message: string }).message).toBe(
        `wg_ip ${wgIp} is a loopback address, taken only from an agent on the controller's own machine (a heartbeat over loopback); this one came from ${hostA.hostAddress}: set VM_WG_IP to the node's WireGuard address`,
      );
    }
    // Nothing stored (its own mesh address is taken: the next test's agent beats so).
    expect((await nodesOn(hostA)).map((node) => node.node_id)).not.toContain('squatter');
  });

  it('lists on one controller the node that beats to the other, and loses nothing when one restarts', async () => {
    await enrolled(
      startAgent({
        VM_FLEET_ENDPOINT: `http://${hostA.address}:9203`,
        VM_NODE_ID: 'shared-node',
        // Its own address as controller A sees it: a loopback one is taken only over loopback.
        VM_WG_IP: hostA.hostAddress,
        VM_HEARTBEAT_INTERVAL_S: '1',
        VM_DISK_DIR: diskDir,
      }),
    );
    const onB = await eventually(
      'the node listed by controller B',
      async () => (await nodesOn(hostB)).find((node) => node.node_id === 'shared-node'),
      5_000,
    );
    expect(onB).toMatchObject({ node_id: 'shared-node', wg_ip: hostA.hostAddress });
    expect(await nodesOn(hostA)).toEqual(await nodesOn(hostB));

    expect(await controllerA.stop()).toEqual({ code: 0, signal: null });
    controllerA = await controllerOn(hostA);
    expect((await nodesOn(hostA)).map((node) => node.node_id)).toEqual(['shared-node']);
  });
});
