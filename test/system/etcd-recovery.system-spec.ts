import { execFileSync } from 'node:child_process';
import type { ServerResponse } from 'node:http';
import type { AgentRestoreRequest, HeartbeatReplica, VmRecord } from '@app/fleet-domain';
import { eventually, stopAllDaemons } from '../support/daemons';
import { EtcdControllers, heartbeatTo } from '../support/etcd-controllers';
import { EtcdServer } from '../support/etcd-server';
import { vmRecord } from '../support/heartbeats';
import { TestHost } from '../support/netns';
import { StubAgent, StubAgentCall, json } from '../support/stub-agent';

jest.setTimeout(120_000);

const FENCE_AFTER_S = 10;
/** The least the controller takes: more than fence_after + 2 heartbeat intervals (5 s). */
const RECOVER_AFTER_S = 21;
const VM = 'vm-00000000000000b1';
const PORTS = [{ host_port: 40022, guest_port: 22, protocol: 'tcp' as const }];

/** A stub agent that holds a copy of VM (taken at `copiedAt`) and makes what it is asked to restore. */
function restoringAgent(copiedAt: () => string) {
  return (call: StubAgentCall, res: ServerResponse): void => {
    const asked = /^\/v1\/restores\/([^/]+)\/points$/.exec(call.url);
    const point = {
      source: 'replica',
      backup_id: '20261205T041700Z-3f2a/0000',
      kind: 'full',
      taken_at: copiedAt(),
      size_bytes: 1000,
    };
    if (call.method === 'GET' && asked) {
      return json(res, 200, {
        vm_id: asked[1],
        points: [point],
        spec: { vm_type: 'web', ram_mb: 512, vcpu_count: 1, tenant_id: null, ports: PORTS },
      });
    }
    // The copy planner's plan, which grants the holder its copy (a claim without one is ignored).
    if (call.method === 'PUT' && /^\/v1\/vms\/[^/]+\/copy-plan$/.test(call.url)) {
      return json(res, 200, {});
    }
    if (call.method === 'POST' && call.url === '/v1/restores') {
      const body = call.body as AgentRestoreRequest;
      const vm: VmRecord = vmRecord(body.vm_id, {
        state: 'Provisioning' as VmRecord['state'],
        ram_alloc_mb: body.ram_mb,
        host_ports: body.ports,
        started_at: null,
      });
      return json(res, 201, { vm, point });
    }
    json(res, 404, { statusCode: 404, message: 'no such route' });
  };
}

/**
 * Issue 36, the controller's side, with real processes: two controllers on one real etcd, each
 * on a host (network namespace) of its own, elect one leader; killed, the other takes over; a
 * node that stops heartbeating (a stub agent) has its protected VM restored by the leader on
 * the node holding its copy once VM_FLEET_RECOVER_AFTER_S has passed since its last lease
 * renewal, and when it comes back it is told the VM is superseded.
 */
describe('two controllers on one etcd: leadership and recovery', () => {
  let hostA: TestHost;
  let hostB: TestHost;
  let etcd: EtcdServer;
  let controllers: EtcdControllers;
  const stubs: StubAgent[] = [];
  const ops = (host: TestHost) => `http://${host.address}:9206`;
  const controllerOn = (host: TestHost) =>
    controllers.start(host, {
      VM_FLEET_FENCE_AFTER_S: String(FENCE_AFTER_S),
      VM_FLEET_RECOVER_AFTER_S: String(RECOVER_AFTER_S),
      VM_FLEET_OPS_ADDR: `${host.address}:9206`,
    });

  beforeAll(async () => {
    hostA = TestHost.create('ppn-ha-a', 31);
    hostB = TestHost.create('ppn-ha-b', 32);
    for (const host of [hostA, hostB]) {
      execFileSync('ip', ['-n', host.name, 'route', 'add', 'default', 'via', host.hostAddress]);
    }
    etcd = await EtcdServer.start([hostA.hostAddress, hostB.hostAddress]);
    controllers = new EtcdControllers(etcd);
    await Promise.all([controllerOn(hostA), controllerOn(hostB)]);
  });

  afterAll(async () => {
    await stopAllDaemons();
    await Promise.all(stubs.map((stub) => stub.stop()));
    await etcd?.stop();
    hostA?.remove();
    hostB?.remove();
  });

  it('elects one leader; the leader killed, the other takes over within 10 s', async () => {
    const first = await controllers.leader(15_000);
    const other = controllers.other(first.host);
    await other[1].waitForOutput(/\[Leadership\] controller \S+ follows the leader, controller /);
    expect(other[1].output).not.toMatch(/is the leader/);

    first.daemon.process.kill('SIGKILL');
    const killedAt = Date.now();
    await first.daemon.waitForExit();
    const next = await controllers.leader(15_000, [other]);
    expect(next.at - killedAt).toBeLessThanOrEqual(10_000);

    // Restarted, the old one follows.
    const again = await controllerOn(first.host);
    await again.waitForOutput(/follows the leader/);
  });

  it(`restores a lapsed node's protected VM on the node holding its copy ${RECOVER_AFTER_S} s after its last renewal, through the leader; back, the node is told it is superseded`, async () => {
    const copiedAt = new Date(Date.now() - 5_000).toISOString();
    const lost = await new StubAgent(restoringAgent(() => copiedAt)).start(hostA.hostAddress);
    const holder = await new StubAgent(restoringAgent(() => copiedAt)).start(hostB.hostAddress);
    stubs.push(lost, holder);
    const protectedVm = {
      ...vmRecord(VM, { host_ports: PORTS }),
      copies: { count: 1, every_s: 60 },
    };
    const replica: HeartbeatReplica = {
      vm_id: VM,
      source_node_id: 'node-lost',
      copied_at: copiedAt,
      size_bytes: 1000,
    };
    const holderBeat = () =>
      heartbeatTo(hostB, {
        node_id: 'node-holder',
        wg_ip: hostB.hostAddress,
        spawn_port: holder.port,
        // Room for the copy, so that the planner grants it to this node.
        disk_room: {
          room_mb: 40_960,
          committed_mb: 0,
          committable_mb: 40_960,
          reserve_mb: 2_048,
          overcommit: 1,
        },
        replicas: [replica],
      });
    // Through either controller the same lease is renewed, and each answer says so.
    for (const host of [hostA, hostB]) {
      expect(
        await heartbeatTo(host, {
          node_id: 'node-lost',
          wg_ip: hostA.hostAddress,
          spawn_port: lost.port,
          vms: [protectedVm],
        }),
      ).toEqual({ accepted: true, fence_after_s: FENCE_AFTER_S, copies_default: 1 });
    }
    const lastRenewal = Date.now();
    // The holder reports the VM's copy: the answer says the fleet still wants it (and its
    // routing mesh forwards the VM's SSH port to the node that runs it).
    expect(await holderBeat()).toEqual({
      accepted: true,
      fence_after_s: FENCE_AFTER_S,
      copies_default: 1,
      wanted_replica_vm_ids: [VM],
      mesh_routes: [
        {
          host_port: 40022,
          protocol: 'tcp',
          vm_id: VM,
          node_id: 'node-lost',
          wg_ip: hostA.hostAddress,
        },
      ],
    });
    const beating = setInterval(() => void holderBeat().catch(() => undefined), 2_000);
    try {
      const { daemon } = await controllers.leader(1_000);
      const recoveredAt = await daemon.waitForOutput(
        new RegExp(
          `\\[Recovery\\] node node-lost lost \\(last lease renewal [^)]+\\): vm ${VM} recovered on node node-holder from its replica \\S+ taken ${copiedAt.replace(/\./g, '\\.')} \\(copy age \\d+ s\\), generation 1`,
        ),
        RECOVER_AFTER_S * 1000 + 20_000,
      );
      expect(recoveredAt - lastRenewal).toBeGreaterThanOrEqual(RECOVER_AFTER_S * 1000);
      expect(holder.calls.filter((call) => call.url === '/v1/restores')).toHaveLength(1);
      expect(lost.calls.filter((call) => call.method === 'POST')).toEqual([]);

      // Back, the lost node is renewed again and told its copy is superseded.
      const back = await eventually(
        'the lost node renewed again',
        async () => {
          const answer = await heartbeatTo(hostA, {
            node_id: 'node-lost',
            wg_ip: hostA.hostAddress,
            spawn_port: lost.port,
            vms: [protectedVm],
          });
          return answer.fence_after_s === undefined ? undefined : answer;
        },
        15_000,
      );
      // (Its routing mesh's table, to the VM on the holder, is not this test's.)
      expect({ ...back, mesh_routes: undefined }).toEqual({
        accepted: true,
        superseded_vm_ids: [VM],
        fence_after_s: FENCE_AFTER_S,
        copies_default: 1,
      });
      // `ppn-fleet vm copies` shows the generation raised, through either controller.
      for (const host of [hostA, hostB]) {
        const copies = await fetch(`${ops(host)}/v1/vms/${VM}/copies`);
        expect(copies.status).toBe(200);
        expect(await copies.json()).toMatchObject({
          vm_id: VM,
          node_id: 'node-holder',
          generation: 1,
        });
      }
    } finally {
      clearInterval(beating);
    }
  });

  it('refuses declare-dead (409, naming the lease) while the node renews its lease, and takes it once the lease ran out', async () => {
    const declare = () =>
      fetch(`${ops(hostB)}/v1/nodes/node-gone/declare-dead`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
      });
    // (Its routing mesh's table, to the VM the previous test recovered, is not this test's.)
    const renewed = await heartbeatTo(hostA, { node_id: 'node-gone', wg_ip: hostA.hostAddress });
    expect({ ...renewed, mesh_routes: undefined }).toEqual({
      accepted: true,
      fence_after_s: FENCE_AFTER_S,
      copies_default: 1,
    });
    const refused = await declare();
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { message: string }).message).toMatch(
      /^node node-gone still renews its lease \(last renewed \S+, \d+ s left\): it heartbeats to a controller, so it may run its VMs; a node is declared dead only once its lease ran out \(10 s, VM_FLEET_FENCE_AFTER_S, after its last heartbeat\), when it has ended them itself$/,
    );
    const declared = await eventually(
      'the lease ran out',
      async () => {
        const answer = await declare();
        return answer.status === 202 ? answer : undefined;
      },
      (FENCE_AFTER_S + 5) * 1000,
      500,
    );
    expect(await declared.json()).toMatchObject({ node_id: 'node-gone', protected_vm_ids: [] });
    await controllers.on
      .get(hostB)!
      .waitForOutput(/\[Recovery\] node node-gone declared dead by an operator/);
  });
});
