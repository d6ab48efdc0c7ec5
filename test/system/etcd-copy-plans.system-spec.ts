import { execFileSync } from 'node:child_process';
import type { FleetVm, HeartbeatReplica } from '@app/fleet-domain';
import { eventually, stopAllDaemons } from '../support/daemons';
import { EtcdControllers, controllerUrl, heartbeatTo } from '../support/etcd-controllers';
import { EtcdServer } from '../support/etcd-server';
import { vmRecord } from '../support/heartbeats';
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
  let controllers: EtcdControllers;
  const stubs: StubAgent[] = [];

  beforeAll(async () => {
    hostA = TestHost.create('ppn-plan-a', 81);
    hostB = TestHost.create('ppn-plan-b', 82);
    for (const host of [hostA, hostB]) {
      execFileSync('ip', ['-n', host.name, 'route', 'add', 'default', 'via', host.hostAddress]);
    }
    etcd = await EtcdServer.start([hostA.hostAddress, hostB.hostAddress]);
    controllers = new EtcdControllers(etcd);
    await Promise.all([controllers.start(hostA), controllers.start(hostB)]);
  });

  afterAll(async () => {
    await stopAllDaemons();
    await Promise.all(stubs.map((stub) => stub.stop()));
    await etcd?.stop();
    hostA?.remove();
    hostB?.remove();
  });

  it("pushes each VM's plan from the leader alone, and the follower takes the copy the leader granted", async () => {
    const leading = await controllers.leader(15_000);
    const [followerHost, follower] = controllers.other(leading.host);
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
        heartbeatTo(followerHost, {
          node_id: 'node-source',
          wg_ip: hostA.hostAddress,
          spawn_port: source.port,
          vms: [{ ...vmRecord(VM), copies: { count: 1, every_s: 60 } }],
        }),
        heartbeatTo(followerHost, {
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
          const vms = (await (
            await fetch(`${controllerUrl(followerHost)}/v1/vms`)
          ).json()) as FleetVm[];
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
