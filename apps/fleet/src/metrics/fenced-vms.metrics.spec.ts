import { Logger } from '@nestjs/common';
import * as prometheus from 'prom-client';
import { FakeClock } from '../../../../test/support/fake-clock';
import { heartbeat } from '../../../../test/support/heartbeats';
import { sampleValue } from '../../../../test/support/prometheus-text';
import { LiveNodesReader } from '../nodes/live-nodes.reader';
import { InMemoryNodesRepository } from '../nodes/memory/in-memory-nodes.repository';
import { NodeTokens } from '../nodes/node-tokens';
import { NodesService } from '../nodes/nodes.service';
import { FleetMetrics } from './fleet-metrics.service';

describe('ppn_fleet_node_fenced_vms (the VMs a node says it fenced)', () => {
  let clock: FakeClock;
  let metrics: FleetMetrics;
  let nodes: NodesService;

  beforeEach(() => {
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    clock = new FakeClock();
    const repository = new InMemoryNodesRepository();
    const live = new LiveNodesReader(repository, clock);
    metrics = new FleetMetrics({ prometheus, readNodes: () => live.read(), version: '1' });
    nodes = new NodesService(repository, clock, metrics, new NodeTokens());
  });

  afterEach(() => jest.restoreAllMocks());

  const beat = (node_id: string, second: number, fenced?: string[]) =>
    nodes.acceptHeartbeat(
      heartbeat({
        node_id,
        wg_ip: '10.8.0.1',
        timestamp_utc: `2026-08-06T12:00:${String(second).padStart(2, '0')}Z`,
        ...(fenced && { fenced_vm_ids: fenced }),
      }),
    );

  const fenced = async (nodeId: string): Promise<number | undefined> =>
    sampleValue((await metrics.scrape()).body, `ppn_fleet_node_fenced_vms{node_id="${nodeId}"}`);

  it("shows each live node's fenced VMs as its last heartbeat listed them, 0 once it lists none", async () => {
    await beat('n1', 0, ['vm-1', 'vm-2']);
    await beat('n2', 0);
    expect(await fenced('n1')).toBe(2);
    expect(await fenced('n2')).toBe(0);
    clock.advance(5_000);
    await beat('n1', 5);
    expect(await fenced('n1')).toBe(0);
  });

  it('drops the series with the node', async () => {
    await beat('n1', 0, ['vm-1']);
    clock.advance(31_000);
    expect(await fenced('n1')).toBeUndefined();
  });
});
