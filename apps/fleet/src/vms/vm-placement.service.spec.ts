import { Logger } from '@nestjs/common';
import { SpawnVmRequest, VmState, nodeStateFromHeartbeat } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { heartbeat, vmRecord } from '../../../../test/support/heartbeats';
import { InMemoryKeyClaims } from '../nodes/memory/in-memory-key-claims.repository';
import { InMemoryNodesRepository } from '../nodes/memory/in-memory-nodes.repository';
import { Spawned, VmHostClient } from './vm-host.client';
import { VmHostClientSettings } from './agent-calls';
import { FleetMetrics } from '../metrics/fleet-metrics.service';
import { VmCreateSettings } from './vm-create.settings';
import { VmPlacementService } from './vm-placement.service';

describe('VmPlacementService: what a create reads', () => {
  let clock: FakeClock;
  let repository: InMemoryNodesRepository;
  let placement: VmPlacementService;
  let spawned: SpawnVmRequest[];

  beforeEach(async () => {
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    clock = new FakeClock();
    repository = new InMemoryNodesRepository();
    // A fleet of 50 nodes, each listing VMs: a read of the whole store is what a create avoids.
    for (let n = 0; n < 50; n++) {
      const vms = [vmRecord(`vm-${String(n).padStart(16, '0')}`)];
      const state = nodeStateFromHeartbeat(heartbeat({ node_id: `n${n}`, vms }), clock.now());
      await repository.update(state.node_id, () => ({ next: state, result: undefined }));
    }
    spawned = [];
    const spawn = (_node: unknown, request: SpawnVmRequest): Promise<Spawned> =>
      Promise.resolve(spawned.push(request)).then(() => ({
        vm: { ...vmRecord(request.vm_id!), state: VmState.Provisioning },
        replayed: false,
      }));
    const settings = Object.assign(new VmCreateSettings(), { copies: { count: 2, every_s: 90 } });
    placement = new VmPlacementService(
      repository,
      new InMemoryKeyClaims(),
      { spawn } as unknown as VmHostClient,
      new VmHostClientSettings(),
      clock,
      new FleetMetrics(),
      settings,
    );
  });

  afterEach(() => jest.restoreAllMocks());

  const request = { vm_type: 'web', ram_mb: 1024, vcpu_count: 1, prefer_kvm: false };

  it('reads the nodes once, live ones only, for a create with or without a new key; every node only for a retry', async () => {
    const listAll = jest.spyOn(repository, 'listAll');
    const listLive = jest.spyOn(repository, 'listLive');
    // The VM id the agent answered is checked against the index of VM ids, not every node.
    const ownersOf = jest.spyOn(repository, 'ownersOf');

    await placement.createVm(request);
    await placement.createVm(request, 'order-1');
    expect([listAll.mock.calls.length, listLive.mock.calls.length]).toEqual([0, 2]);
    expect(ownersOf).toHaveBeenCalledTimes(2);

    // A retry finds the VM the key's record names, on its node: one read, no placement.
    const retry = await placement.createVm(request, 'order-1');
    expect(retry.replayed).toBe(true);
    expect([listAll.mock.calls.length, listLive.mock.calls.length]).toEqual([1, 2]);
  });

  it("gives a create without copies the fleet's defaults in its spawn, and keeps a create's own", async () => {
    await placement.createVm(request);
    await placement.createVm({ ...request, copies: { count: 0, every_s: 30 } });
    expect(spawned.map(({ copies }) => copies)).toEqual([
      { count: 2, every_s: 90 },
      { count: 0, every_s: 30 },
    ]);
  });
});
