import { execFileSync } from 'node:child_process';
import type { CreateVmRequest, HeartbeatVm, VmRecord } from '@app/fleet-domain';
import { spawnKeyOf as spawnKeyFor } from '../../apps/fleet/src/vms/spawn-key';
import { Daemon, FLEET_MAIN, ListedNode, eventually, stopAllDaemons } from '../support/daemons';
import { heartbeat } from '../support/heartbeats';
import { TestHost } from '../support/netns';
import { RedisServer } from '../support/redis-server';
import { StubAgent, json, spawnKeyOf, spawnedVm } from '../support/stub-agent';

jest.setTimeout(120_000);

const PAIRS = 100;
/** Pairs sent at once: each pair's two creates leave together, a few pairs side by side. */
const PAIRS_AT_ONCE = 10;
/** How long a stub agent takes to make a VM: a loser's create arrives while it is being made. */
const SPAWN_MS = 100;
const request: CreateVmRequest = { vm_type: 'web', ram_mb: 512, vcpu_count: 1, prefer_kvm: false };

/**
 * Simultaneous creates with one Idempotency-Key on two controller processes sharing one
 * Redis: the key's claim in Redis lets one of them place and dispatch, the other answers the
 * VM it made. Each controller runs on a host of its own (port 9203); two stub agents, one on
 * each host's outer end and each reachable from both controllers, make VMs the way the real
 * agent does (one per spawn key on a node, answered again with 200), and count the spawns.
 */
describe('same-key creates on two controllers at once', () => {
  let hostA: TestHost;
  let hostB: TestHost;
  let redis: RedisServer;
  let beating: NodeJS.Timeout | undefined;
  /** Every spawn any agent received, by spawn key: the nodes it was sent to. */
  const spawns = new Map<string, string[]>();
  const agents: Array<{ nodeId: string; stub: StubAgent; wgIp: string; made: HeartbeatVm[] }> = [];

  const controllerOn = async (host: TestHost): Promise<Daemon> => {
    const daemon = new Daemon(
      FLEET_MAIN,
      { VM_FLEET_REDIS_URL: `redis://${host.hostAddress}:${redis.port}` },
      [],
      [],
      host.name,
    );
    await daemon.waitForOutput(/Redis at .* connected/);
    await daemon.waitForOutput(/listening on 0\.0\.0\.0:9203/);
    return daemon;
  };

  /** An agent on the outer end of `host`, making each spawn key's VM once per node. */
  const agentOn = async (nodeId: string, host: TestHost) => {
    const made: HeartbeatVm[] = [];
    const making = new Map<string, Promise<VmRecord>>();
    const stub = await new StubAgent(async (call, res) => {
      const spawnKey = spawnKeyOf(res)!;
      spawns.set(spawnKey, [...(spawns.get(spawnKey) ?? []), nodeId]);
      const earlier = making.get(spawnKey);
      if (earlier) return json(res, 200, await earlier);
      const vm = new Promise<VmRecord>((resolve) =>
        setTimeout(() => resolve(spawnedVm(call)), SPAWN_MS),
      );
      making.set(spawnKey, vm);
      made.push({ ...(await vm), idempotency_key: spawnKey });
      json(res, 201, await vm);
    }).start(host.hostAddress);
    agents.push({ nodeId, stub, wgIp: host.hostAddress, made });
  };

  /** Every agent's heartbeat to controller A, listing the VMs it made (as a real agent does). */
  const beat = () =>
    Promise.all(
      agents.map(({ nodeId, stub, wgIp, made }) =>
        fetch(`http://${hostA.address}:9203/v1/nodes/heartbeat`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(
            heartbeat({
              node_id: nodeId,
              wg_ip: wgIp,
              spawn_port: stub.port,
              ram_total_mb: 262_144,
              ram_used_mb: 4_096,
              vms: made,
              timestamp_utc: new Date().toISOString(),
            }),
          ),
        }).then((res) => expect(res.status).toBe(200)),
      ),
    );

  const create = (host: TestHost, key: string) =>
    fetch(`http://${host.address}:9203/v1/vms`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(request),
    }).then(async (res) => ({
      status: res.status,
      body: (await res.json()) as { vm_id?: string },
    }));

  beforeAll(async () => {
    hostA = TestHost.create('ppn-key-a', 11);
    hostB = TestHost.create('ppn-key-b', 12);
    // Each controller reaches both agents, and the other host's end, through its own.
    for (const host of [hostA, hostB]) {
      execFileSync('ip', ['-n', host.name, 'route', 'add', 'default', 'via', host.hostAddress]);
    }
    redis = await RedisServer.start(undefined, [hostA.hostAddress, hostB.hostAddress]);
    await Promise.all([controllerOn(hostA), controllerOn(hostB)]);
    await agentOn('node-a', hostA);
    await agentOn('node-b', hostB);
    await beat();
    beating = setInterval(() => void beat(), 2_000);
    for (const host of [hostA, hostB]) {
      await eventually(
        `both nodes listed on ${host.name}`,
        async () => {
          const listed = (await (
            await fetch(`http://${host.address}:9203/v1/nodes`)
          ).json()) as ListedNode[];
          return listed.length === 2 || undefined;
        },
        5_000,
      );
    }
  });

  afterAll(async () => {
    clearInterval(beating);
    await stopAllDaemons();
    await Promise.all(agents.map(({ stub }) => stub.stop()));
    await redis?.stop();
    hostA?.remove();
    hostB?.remove();
  });

  it(`makes one VM per key: ${PAIRS} pairs, one spawn each, both answers naming it`, async () => {
    const problems: string[] = [];
    for (let first = 0; first < PAIRS; first += PAIRS_AT_ONCE) {
      await Promise.all(
        Array.from({ length: PAIRS_AT_ONCE }, async (_, index) => {
          const key = `pair-${first + index}`;
          // The barrier: both creates of the pair leave in the same tick.
          const [onA, onB] = await Promise.all([create(hostA, key), create(hostB, key)]);
          const sentTo = spawns.get(spawnKeyFor(request, key)) ?? [];
          const statuses = [onA.status, onB.status].sort();
          if (
            sentTo.length !== 1 ||
            statuses.join() !== '200,201' ||
            onA.body.vm_id === undefined ||
            onA.body.vm_id !== onB.body.vm_id
          ) {
            problems.push(
              `${key}: spawned on [${sentTo.join(', ')}], answered ${onA.status} ${onA.body.vm_id} on A and ${onB.status} ${onB.body.vm_id} on B`,
            );
          }
        }),
      );
    }
    expect(problems).toEqual([]);
    expect(spawns.size).toBe(PAIRS);
  });
});
