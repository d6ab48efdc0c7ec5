import { Logger } from '@nestjs/common';
import { NodeHeartbeat } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { heartbeat as agentHeartbeat } from '../../../../test/support/heartbeats';
import { InMemoryNodesRepository } from './memory/in-memory-nodes.repository';
import { NodesService } from './nodes.service';

/** Node `node_id` at 10.8.0.1, 4096 MB of which 1024 used, stamped 12:00:00. */
function heartbeat(node_id: string, extra: Partial<NodeHeartbeat> = {}): NodeHeartbeat {
  return agentHeartbeat({
    node_id,
    wg_ip: '10.8.0.1',
    hostname: node_id,
    ram_total_mb: 4096,
    ram_used_mb: 1024,
    timestamp_utc: '2026-08-06T12:00:00Z',
    ...extra,
  });
}

describe('NodesService', () => {
  let clock: FakeClock;
  let repository: InMemoryNodesRepository;
  let service: NodesService;
  let logs: string[];

  beforeEach(() => {
    clock = new FakeClock();
    repository = new InMemoryNodesRepository();
    service = new NodesService(repository, clock);
    logs = [];
    jest.spyOn(Logger.prototype, 'log').mockImplementation((message: unknown) => {
      logs.push(String(message));
    });
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => {
      logs.push(String(message));
    });
  });

  afterEach(() => jest.restoreAllMocks());

  it('sweeps a node out of the store after 30 s of silence, logging how long it was silent', async () => {
    await service.acceptHeartbeat(heartbeat('n1'));
    await service.acceptHeartbeat(heartbeat('n2'));
    clock.advance(20_000);
    await service.acceptHeartbeat(heartbeat('n2', { timestamp_utc: '2026-08-06T12:00:20Z' }));

    // n1 has now been silent exactly 30 s: still live, so the sweep leaves it and says nothing.
    clock.advance(10_000);
    await service.dropStaleNodes();
    expect(logs.filter((line) => line.includes('dropped'))).toEqual([]);
    expect((await service.getNode('n1')).node_id).toBe('n1');
    expect((await repository.listLive(0)).map((n) => n.node_id).sort()).toEqual(['n1', 'n2']);

    clock.advance(1_500);
    await service.dropStaleNodes();
    expect((await repository.listLive(0)).map((n) => n.node_id)).toEqual(['n2']);
    expect(logs).toContain('node n1 dropped after 31.5 s without a heartbeat');
  });

  it('names the first 20 nodes of a mass drop and sums up the rest in one line', async () => {
    for (let index = 0; index < 25; index++)
      await service.acceptHeartbeat(heartbeat(`rack-${index}`));
    logs.length = 0;
    clock.advance(31_000);
    await service.dropStaleNodes();
    expect(logs).toHaveLength(21);
    expect(logs[0]).toBe('node rack-0 dropped after 31.0 s without a heartbeat');
    expect(logs[20]).toMatch(
      /^dropped 25 nodes silent for more than 30 s in one sweep \(\d+\.\d ms\); 5 not named above$/,
    );
    expect(await repository.listLive(0)).toEqual([]);
  });

  it('logs joining, take-over and ignored heartbeats once each, and nothing for a routine beat', async () => {
    clock.advance(10_000); // 12:00:10: no stamp below is ahead of it
    await service.acceptHeartbeat(heartbeat('n1'));
    await service.acceptHeartbeat(heartbeat('n1', { timestamp_utc: '2026-08-06T12:00:10Z' }));
    await service.acceptHeartbeat(heartbeat('n1', { timestamp_utc: '2026-08-06T12:00:05Z' }));
    await service.acceptHeartbeat(heartbeat('n1', { boot_id: 'boot-2', wg_ip: '10.8.0.9' }));
    expect(logs).toEqual([
      'node n1 joined from 10.8.0.1 (host n1, boot boot-1)',
      'node n1: ignored heartbeat stamped 2026-08-06T12:00:05Z, older than the stored 2026-08-06T12:00:10Z of boot boot-1',
      'node n1 taken over: now 10.8.0.9 (host n1, boot boot-2), was 10.8.0.1 (host n1, boot boot-1)',
    ]);
  });
});
