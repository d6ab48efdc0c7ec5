import { Subject } from 'rxjs';
import type { MeshRoute } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { vmHostConfig } from '../../../../test/support/configs';
import { vmRecord } from '../../../../test/support/heartbeats';
import type { HostFactsService } from '../host-facts/host-facts.service';
import { HostMetrics } from '../metrics/host-metrics.service';
import type { OwnVm, RoutingMesh } from '../mesh/routing-mesh';
import type { NodeVmsSource } from '../vms/node-vms.source';
import type { FleetClient, HeartbeatAnswer } from './fleet.client';
import { HeartbeatService } from './heartbeat.service';

const ROUTE: MeshRoute = {
  host_port: 8080,
  protocol: 'tcp',
  vm_id: 'vm-web',
  node_id: 'node-b',
  wg_ip: '10.8.0.22',
};

describe("HeartbeatService and the routing mesh: each taken heartbeat's answer is the mesh's table", () => {
  async function sendAnswered(answers: HeartbeatAnswer[]) {
    const learned: Array<{ routes: readonly MeshRoute[]; own: readonly OwnVm[] }> = [];
    const own = vmRecord('vm-own', {
      host_ports: [{ host_port: 40022, guest_port: 22, protocol: 'tcp' }],
    });
    const vms: NodeVmsSource = {
      report: () => Promise.resolve({ vms: [own], committed: [] }),
      supersede: () => Promise.resolve(),
      changes: new Subject<void>().asObservable(),
    };
    const facts = {
      read: () =>
        Promise.resolve({
          hostname: 'node-a',
          ram_total_mb: 4096,
          ram_used_mb: 0,
          cpu_cores: 2,
          cpu_load_pct: 0,
          kvm_available: false,
          boot_id: 'boot-1',
        }),
    } as unknown as HostFactsService;
    const fleet = {
      sendHeartbeat: () => Promise.resolve(answers.shift() ?? { accepted: true }),
    } as unknown as FleetClient;
    const mesh = {
      learn: (routes: readonly MeshRoute[], ownVms: readonly OwnVm[]) => {
        learned.push({ routes, own: ownVms });
        return Promise.resolve();
      },
    } as unknown as RoutingMesh;
    const service = new HeartbeatService(
      vmHostConfig({ VM_NODE_ID: 'node-a', VM_WG_IP: '10.8.0.21' }),
      facts,
      vms,
      fleet,
      new FakeClock(),
      new HostMetrics(),
      undefined,
      undefined,
      undefined,
      mesh,
    );
    await service.send(5_000);
    return { learned, own };
  }

  it("gives the mesh the answer's routes beside this node's own VMs", async () => {
    const { learned, own } = await sendAnswered([{ accepted: true, mesh_routes: [ROUTE] }]);
    expect(learned).toEqual([{ routes: [ROUTE], own: [own] }]);
  });

  it('an answer without a table is an empty one (every listener closes)', async () => {
    const { learned } = await sendAnswered([{ accepted: true }]);
    expect(learned.map(({ routes }) => routes)).toEqual([[]]);
  });

  it('a heartbeat ignored (a late copy) changes nothing; the one sent again, taken, does', async () => {
    // FakeClock's wall clock reads 2026-08-06T12:00:00Z: the controller holds a later stamp.
    const { learned } = await sendAnswered([
      { accepted: false, stored_timestamp_utc: '2026-08-06T12:05:00Z' },
      { accepted: true, mesh_routes: [ROUTE] },
    ]);
    expect(learned.map(({ routes }) => routes)).toEqual([[ROUTE]]);
  });
});
