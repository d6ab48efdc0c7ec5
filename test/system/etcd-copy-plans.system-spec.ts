import { execFileSync } from 'node:child_process';
import type { FleetVm, HeartbeatReplica, NodeHeartbeat } from '@app/fleet-domain';
import { Daemon, FLEET_MAIN, eventually, stopAllDaemons } from '../support/daemons';
import { EtcdServer } from '../support/etcd-server';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { TestHost } from '../support/netns';
import { StubAgent, json } from '../support/stub-agent';

jest.setTimeout(120_000);

const VM = 'vm-00000000000000c1';
/** Over one copy planner round (COPY_PLAN_INTERVAL_MS, 10 s): every controller planned since. */
const PLANNER_ROUND_MS = 12_000;

/**
 * Issue 36: with several controllers on one etcd, the copy planner runs on the elected leader
 * only (two planners could push one agent different peers), and a follower still takes a peer's
 * report of the copy the leader granted it (the grant recorded in etcd before the push).
 */
describe('two controllers on one etcd: copy plans', () => {
  let hostA: TestHost;
  let hostB: TestHost;
  let etcd: EtcdServer;
  const controllers = new Map<TestHost, Daemon>();
  const stubs: StubAgent[] = [];
  const base = (host: TestHost) => `http://${host.address}:9203`;

  const controllerOn = async (host: TestHost): Promise<Daemon> => {
    const daemon = new Daemon(
      FLEET_MAIN,
      { VM_FLEET_ETCD_ENDPOINTS: `http://${host.hostAddress}:${etcd.port}` },
      [],
      [],
      host.name,
    );
    controllers.set(host, daemon);
    await daemon.waitForOutput(/listening on 0\.0\.0\.0:9203 \(state shared in etcd at /);
    return daemon;
  };

  const beat = async (host: TestHost, fields: Partial<NodeHeartbeat> & { node_id: string }) => {
    const response = await fetch(`${base(host)}/v1/nodes/heartbeat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(
        heartbeat({ ram_total_mb: 65_536, timestamp_utc: new Date().toISOString(), ...fields }),
      ),
    });
    expect(response.status).toBe(200);
  };

  beforeAll(async () => {
    hostA = TestHost.create('ppn-plan-a', 81);
    hostB = TestHost.create('ppn-plan-b', 82);
    for (const host of [hostA, hostB]) {
      execFileSync('ip', ['-n', host.name, 'route', 'add', 'default', 'via', host.hostAddress]);
    }
    etcd = await EtcdServer.start([hostA.hostAddress, hostB.hostAddress]);
    await Promise.all([controllerOn(hostA), controllerOn(hostB)]);
  });

  afterAll(async () => {
    await stopAllDaemons();
    await Promise.all(stubs.map((stub) => stub.stop()));
    await etcd?.stop();
    hostA?.remove();
    hostB?.remove();
  });

  it("pushes each VM's plan from the leader alone, and the follower takes the copy the leader granted", async () => {
    const leading = await Promise.any(
      [...controllers.entries()].map(([host, daemon]) =>
        daemon
          .waitForOutput(/\[Leadership\] controller \S+ is the leader/, 15_000)
          .then(() => ({ host, daemon })),
      ),
    );
    const [followerHost, follower] = [...controllers.entries()].find(
      ([host]) => host !== leading.host,
    )!;
    await follower.waitForOutput(/\[Leadership\] controller \S+ follows the leader/);

    const planned = (call: { method: string; url: string }) =>
      call.method === 'PUT' && call.url === `/v1/vms/${VM}/copy-plan`;
    const answer = (call: { method: string; url: string }, res: Parameters<typeof json>[0]) =>
      planned(call) ? json(res, 200, {}) : json(res, 404, { statusCode: 404, message: 'no' });
    const source = await new StubAgent(answer).start(hostA.hostAddress);
    const peer = await new StubAgent(answer).start(hostB.hostAddress);
    stubs.push(source, peer);
    const replica: HeartbeatReplica = {
      vm_id: VM,
      source_node_id: 'node-source',
      copied_at: new Date().toISOString(),
      size_bytes: 1000,
    };
    // Both nodes heartbeat to the follower only, every second: the leader reads them from etcd.
    let peerHolds = false;
    const beatBoth = () =>
      Promise.all([
        beat(followerHost, {
          node_id: 'node-source',
          wg_ip: hostA.hostAddress,
          spawn_port: source.port,
          vms: [{ ...vmRecord(VM), copies: { count: 1, every_s: 60 } }],
        }),
        beat(followerHost, {
          node_id: 'node-peer',
          wg_ip: hostB.hostAddress,
          spawn_port: peer.port,
          disk_room: {
            room_mb: 40_960,
            committed_mb: 0,
            committable_mb: 40_960,
            reserve_mb: 2_048,
            overcommit: 1,
          },
          replicas: peerHolds ? [replica] : [],
        }),
      ]);
    await beatBoth();
    const beating = setInterval(() => void beatBoth().catch(() => undefined), 1_000);
    try {
      const pushedAt = await leading.daemon.waitForOutput(
        new RegExp(
          `\\[Copies\\] vm ${VM} on node node-source: copies every 60 s to node node-peer`,
        ),
        30_000,
      );
      // The peer now holds the copy and says so, to the follower only: listed within a read
      // of the grants the leader recorded (5 s) and a heartbeat.
      peerHolds = true;
      const listed = await eventually(
        'the copy listed by the follower',
        async () => {
          const vms = (await (await fetch(`${base(followerHost)}/v1/vms`)).json()) as FleetVm[];
          const vm = vms.find((each) => each.vm_id === VM);
          return vm?.copy_node_id === 'node-peer' ? vm : undefined;
        },
        15_000,
      );
      expect(listed.copied_at).toBe(replica.copied_at);
      // A planner round on each controller since the push: one plan sent, by the leader.
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(0, pushedAt + PLANNER_ROUND_MS - Date.now())),
      );
      expect(source.calls.filter(planned)).toHaveLength(1);
      expect(follower.output).not.toMatch(/\[Copies\] vm \S+ on node/);
    } finally {
      clearInterval(beating);
    }
  });
});
