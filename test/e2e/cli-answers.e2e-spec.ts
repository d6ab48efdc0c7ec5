import request from 'supertest';
import type { HeartbeatReplica, HeartbeatVm, VmRecord } from '@app/fleet-domain';
import { FleetApiClient } from '../../apps/ppn-fleet/src/api/fleet-api.client';
import { FleetOpsApiClient } from '../../apps/ppn-fleet/src/api/fleet-ops-api.client';
import { RunningFleet, startFleet } from '../support/fleet-app';
import { grantCopies } from '../support/granted-copies';
import { heartbeat, vmRecord } from '../support/heartbeats';
import { StubAgent, StubAgentCall, json } from '../support/stub-agent';

/**
 * The CLI's clients against the real controller (in process, both listeners): every answer the
 * commands read passes the CLI's check against the API's wire classes (answer-check.ts), with
 * the optional fields present: a VM's copy, a silent node's VM, backups, disk room.
 */

const API_TOKEN = 'api-token-5c2e8a1f9b3d7064';
const VM = 'vm-00000000000000d1';
const POLICY = { count: 1, every_s: 60 };

/** The VM's old node moving it live as asked, and releasing its disk once moved. */
function moveOut(call: StubAgentCall, res: Parameters<typeof json>[0]): void {
  if (call.method === 'POST' && call.url === `/v1/vms/${VM}/move-out`) {
    const vm: VmRecord = vmRecord(VM);
    return json(res, 200, { vm, mode: 'live', pause_ms: 240, total_ms: 12_000, bytes_sent: 5e8 });
  }
  if (call.method === 'POST' && call.url === `/v1/vms/${VM}/move-release`) {
    res.writeHead(204);
    return void res.end();
  }
  json(res, 404, { statusCode: 404, message: 'not here' });
}

describe("the CLI's clients read the controller's answers as the API gives them", () => {
  let fleet: RunningFleet;
  let agent: StubAgent;

  beforeEach(async () => {
    fleet = await startFleet({ ops: true, env: { VM_FLEET_API_TOKEN: API_TOKEN } });
    agent = await new StubAgent((call, res) => {
      if (call.url === `/v1/vms/${VM}/backups`) {
        return json(res, 200, {
          vm_id: VM,
          backups: [
            {
              backup_id: '20261205T041700Z-3f2a/0000',
              kind: 'full',
              taken_at: '2026-08-06T11:59:00.000Z',
              size_bytes: 1_048_576,
              path: `/mnt/usb/vm-backups/${VM}/20261205T041700Z-3f2a/0000-full.qcow2`,
            },
          ],
          in_progress_since: null,
          last_error: null,
        });
      }
      return moveOut(call, res);
    }).start();
  });

  afterEach(async () => {
    await agent.stop();
    await fleet.close();
  });

  async function beat(
    node_id: string,
    vms: HeartbeatVm[],
    replicas: HeartbeatReplica[] = [],
    spawn_port = 9,
  ): Promise<void> {
    grantCopies(fleet, node_id, replicas);
    await request(fleet.url)
      .post('/v1/nodes/heartbeat')
      .set('Authorization', `Bearer ${API_TOKEN}`)
      .send(
        heartbeat({
          node_id,
          vms,
          replicas,
          spawn_port,
          disk_room: {
            room_mb: 60_000,
            committed_mb: 10_000,
            committable_mb: 50_000,
            reserve_mb: 2048,
            overcommit: 1,
          },
        }),
      )
      .expect(200);
  }

  it('lists the fleet, its nodes and VMs, and a VM with its life cycle, copies, backups and disk room', async () => {
    await beat('src', [{ ...vmRecord(VM), copies: POLICY }], [], agent.port);
    await beat(
      'peer',
      [],
      [{ vm_id: VM, source_node_id: 'src', copied_at: '2026-08-06T11:59:30.000Z', size_bytes: 5 }],
    );
    const api = new FleetApiClient(fleet.url, API_TOKEN, fetch, () => Promise.resolve());
    const ops = new FleetOpsApiClient(fleet.opsUrl, API_TOKEN, fetch);

    expect((await api.fleet()).data.nodes).toHaveLength(2);
    expect((await api.nodes()).data.map(({ node_id }) => node_id).sort()).toEqual(['peer', 'src']);
    expect((await api.node('src')).data.node_id).toBe('src');
    expect((await api.vms()).data).toEqual([
      expect.objectContaining({ vm_id: VM, copied_at: '2026-08-06T11:59:30.000Z' }),
    ]);
    expect((await ops.vms()).data).toEqual([expect.objectContaining({ vm_id: VM })]);
    expect((await ops.copies(VM)).data).toMatchObject({
      vm_id: VM,
      copy_node_id: 'peer',
      backups: { backups: [expect.objectContaining({ kind: 'full' })] },
    });
    expect((await ops.backups(VM)).data.backups).toHaveLength(1);
    expect((await ops.nodeDisks()).data).toHaveLength(2);
  });

  it('moves a VM, the answer read as the API gives it', async () => {
    await beat('src', [vmRecord(VM)], [], agent.port);
    await beat('peer', []);
    const ops = new FleetOpsApiClient(fleet.opsUrl, API_TOKEN, fetch);
    const moving = ops.move(VM, { to: 'peer' });
    // The new node reports the VM once the old one was asked to move it out.
    for (let at = Date.now(); !agent.calls.some(({ url }) => url.endsWith('/move-out'));) {
      if (Date.now() - at > 5_000) throw new Error('the old node was not asked');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    fleet.clock.advance(1_000);
    await beat('peer', [vmRecord(VM)]);
    expect((await moving).data).toMatchObject({
      vm: { vm_id: VM, node_id: 'peer' },
      from_node_id: 'src',
      mode: 'live',
      pause_ms: 240,
    });
  });
});
