import { Logger } from '@nestjs/common';
import { NodeHeartbeat, liveSince } from '@app/fleet-domain';
import { heartbeat as agentHeartbeat } from '../../../../../test/support/heartbeats';
import { loadFleetConfig } from '../../config/fleet-config.load';
import { FleetMetrics } from '../../metrics/fleet-metrics.service';
import { NodeTokens } from '../node-tokens';
import { NodeNotFoundError } from '../nodes.errors';
import { NodesService } from '../nodes.service';
import { IN_MEMORY_NODES_STORE } from './in-memory-nodes.store';

/** A node at a mesh address (a loopback wg_ip is taken only over loopback, not in-process). */
const heartbeat = (fields: Partial<NodeHeartbeat> & { node_id: string }): NodeHeartbeat =>
  agentHeartbeat({ wg_ip: '10.8.0.1', ...fields });

const HOUR_MS = 3_600_000;

/**
 * The store as the controller opens it, on its own clock, with the machine's clocks faked:
 * jest moves Date (the wall clock, which setSystemTime steps) and performance.now() (which only
 * advances).
 */
describe('the in-memory store', () => {
  let service: NodesService;
  let opened: ReturnType<typeof IN_MEMORY_NODES_STORE.open>;

  beforeEach(() => {
    // Timers stay real: only the two clocks are faked.
    jest.useFakeTimers({
      now: Date.UTC(2026, 7, 6, 12),
      doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate', 'clearImmediate', 'hrtime'],
    });
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    opened = IN_MEMORY_NODES_STORE.open(loadFleetConfig({}));
    service = new NodesService(
      opened.repository,
      opened.clock,
      new FleetMetrics(),
      new NodeTokens(),
    );
  });

  afterEach(async () => {
    await opened.close();
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  /** What placement reads: the nodes live now, by the store's clock. */
  const placeable = async () =>
    (await opened.repository.listLive(liveSince(opened.clock.now()))).map((n) => n.node_id);

  it('drops a node silent for 40 s although the wall clock was stepped back an hour', async () => {
    await service.acceptHeartbeat(heartbeat({ node_id: 'n1' }));
    jest.setSystemTime(Date.now() - HOUR_MS);
    jest.advanceTimersByTime(40_000);

    expect(await service.listNodes()).toEqual([]);
    await expect(service.getNode('n1')).rejects.toBeInstanceOf(NodeNotFoundError);
    expect(await placeable()).toEqual([]);
    await service.dropStaleNodes();
    expect(await opened.repository.listLive(0)).toEqual([]);
  });

  it('keeps a node that beat 5 s ago although the wall clock was stepped forward an hour', async () => {
    await service.acceptHeartbeat(heartbeat({ node_id: 'n1' }));
    jest.setSystemTime(Date.now() + HOUR_MS);
    jest.advanceTimersByTime(5_000);

    await service.dropStaleNodes();
    expect((await service.listNodes()).map((n) => n.node_id)).toEqual(['n1']);
    expect(await placeable()).toEqual(['n1']);
  });

  it('shows last_heartbeat and last_updated on the wall clock, stepped or not', async () => {
    jest.setSystemTime(Date.UTC(2026, 7, 6, 11));
    await service.acceptHeartbeat(heartbeat({ node_id: 'n1' }));
    jest.advanceTimersByTime(1_000);
    const status = await service.fleetStatus();
    expect(status.nodes.map((n) => n.last_heartbeat)).toEqual(['2026-08-06T11:00:00.000Z']);
    expect(status.last_updated).toBe('2026-08-06T11:00:01.000Z');
  });
});
