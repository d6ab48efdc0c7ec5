import type { HeartbeatAnswer } from '@app/fleet-domain';
import { FLEET_URL, eventually, startFleetDaemon } from '../support/daemons';
import { EtcdCluster } from '../support/etcd-cluster';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { StubAgent, json } from '../support/stub-agent';

jest.setTimeout(120_000);

/** POSTs a heartbeat of n1 (a protected VM, its agent `stub`): the status and the body. */
async function beat(stub: StubAgent): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${FLEET_URL}/v1/nodes/heartbeat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(
      heartbeat({
        node_id: 'n1',
        spawn_port: stub.port,
        ram_total_mb: 65_536,
        timestamp_utc: new Date().toISOString(),
        vms: [{ ...vmRecord('vm-1'), copies: { count: 1, every_s: 60 } }],
      }),
    ),
  });
  return { status: response.status, body: await response.json() };
}

/**
 * Issue 36, etcd's majority: a controller on a real three-member etcd cluster keeps renewing
 * node leases with one member lost; with two lost, heartbeats and creates answer 503 naming etcd
 * (no lease renewed, so agents fence on their own) and nothing asks any agent to stop a VM;
 * with the majority back, leases are renewed again.
 */
describe('a controller on a three-member etcd that loses its majority', () => {
  it('answers 503 naming etcd while the majority is lost, stops no VM, and renews leases again once it is back', async () => {
    const cluster = await EtcdCluster.start(3);
    const stub = await new StubAgent((_, res) =>
      json(res, 404, { message: 'no such route' }),
    ).start();
    try {
      const fleet = startFleetDaemon({
        VM_FLEET_ETCD_ENDPOINTS: cluster.endpoints,
        VM_FLEET_FENCE_AFTER_S: '10',
        VM_FLEET_RECOVER_AFTER_S: '21',
      });
      await fleet.waitForOutput(/listening on 0\.0\.0\.0:9203/);
      await fleet.waitForOutput(/\[Leadership\] controller \S+ is the leader/);
      expect(await beat(stub)).toEqual({
        status: 200,
        body: { accepted: true, fence_after_s: 10, copies_default: 1 } satisfies HeartbeatAnswer,
      });

      // One member of three lost: nothing changes.
      await cluster.killMember(0);
      expect(
        await eventually(
          'a renewal through the two members left',
          async () => {
            const answer = await beat(stub);
            return answer.status === 200 ? answer : undefined;
          },
          15_000,
          500,
        ),
      ).toEqual({ status: 200, body: { accepted: true, fence_after_s: 10, copies_default: 1 } });

      // Two lost: the majority is gone.
      await cluster.killMember(1);
      const refused = await beat(stub);
      expect(refused.status).toBe(503);
      expect((refused.body as { message: string }).message).toMatch(
        /^fleet state store \(etcd at http:\/\/127\.0\.0\.1:\d+(,http:\/\/127\.0\.0\.1:\d+){2}\) unavailable: (no endpoint answered \(last: http:\/\/127\.0\.0\.1:\d+: (ECONNREFUSED|no answer within 2000 ms|etcd answered HTTP \d+ \(no leader: its cluster lost its majority\?\))\)|etcd has no leader \(its cluster lost its majority\))$/,
      );
      const create = await fetch(`${FLEET_URL}/v1/vms`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ vm_type: 'web', ram_mb: 512, vcpu_count: 1, prefer_kvm: false }),
      });
      expect(create.status).toBe(503);
      expect(((await create.json()) as { message: string }).message).toMatch(
        /^fleet state store \(etcd at .*\) unavailable: /,
      );

      // The majority back: leases are renewed again; no agent was ever asked anything.
      await cluster.startMember(0);
      expect(
        await eventually(
          'a renewal once the majority is back',
          async () => {
            const answer = await beat(stub);
            return answer.status === 200 ? answer : undefined;
          },
          30_000,
          500,
        ),
      ).toEqual({ status: 200, body: { accepted: true, fence_after_s: 10, copies_default: 1 } });
      expect(stub.calls).toEqual([]);
      expect(await fleet.stop()).toEqual({ code: 0, signal: null });
    } finally {
      await stub.stop();
      await cluster.stop();
    }
  });
});
