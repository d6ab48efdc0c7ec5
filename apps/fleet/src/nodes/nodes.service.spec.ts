import { Logger } from '@nestjs/common';
import { NodeHeartbeat } from '@app/fleet-domain';
import { FakeClock } from '../../../../test/support/fake-clock';
import { heartbeat as agentHeartbeat, vmRecord } from '../../../../test/support/heartbeats';
import { FleetMetrics } from '../metrics/fleet-metrics.service';
import { InMemoryNodesRepository } from './memory/in-memory-nodes.repository';
import { VmHolderIndex } from './memory/vm-holder-index';
import { NodeTokens } from './node-tokens';
import { LoopbackWgIpError } from './nodes.errors';
import { VmIdsHeldElsewhereError } from './nodes.repository';
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
  let metrics: FleetMetrics;

  beforeEach(() => {
    clock = new FakeClock();
    repository = new InMemoryNodesRepository();
    metrics = new FleetMetrics();
    service = new NodesService(repository, clock, metrics, new NodeTokens());
    logs = [];
    jest.spyOn(Logger.prototype, 'log').mockImplementation((message: unknown) => {
      logs.push(String(message));
    });
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => {
      logs.push(String(message));
    });
  });

  afterEach(() => jest.restoreAllMocks());

  it('takes a loopback wg_ip only from a heartbeat over loopback: else 400 naming wg_ip, nothing stored', async () => {
    for (const wg_ip of ['127.0.0.1', '127.8.0.9', '::1', '::ffff:127.0.0.1']) {
      await expect(
        service.acceptHeartbeat(heartbeat('n1', { wg_ip }), undefined, '192.0.2.7'),
      ).rejects.toThrow(new LoopbackWgIpError(wg_ip, '192.0.2.7'));
      // No address known (never from a socket): not taken either.
      await expect(service.acceptHeartbeat(heartbeat('n1', { wg_ip }))).rejects.toThrow(
        LoopbackWgIpError,
      );
    }
    expect(await repository.listAll()).toEqual([]);
    expect(logs).toContain(
      'node n1: heartbeat refused, its wg_ip 127.0.0.1 is loopback but it came from 192.0.2.7',
    );
    // The agent on the controller's own machine (npm start, the tests), in any spelling.
    for (const from of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) {
      await service.acceptHeartbeat(heartbeat('n1', { wg_ip: '127.0.0.2' }), undefined, from);
    }
    // A node's own address, from anywhere.
    await service.acceptHeartbeat(heartbeat('n2', { wg_ip: '10.8.0.2' }), undefined, '192.0.2.7');
    expect((await repository.listAll()).map((node) => [node.node_id, node.wg_ip])).toEqual([
      ['n1', '127.0.0.2'],
      ['n2', '10.8.0.2'],
    ]);
  });

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

  it('answers whether a heartbeat was taken, and with the stamp to beat when it was not', async () => {
    clock.advance(10_000);
    expect(
      await service.acceptHeartbeat(heartbeat('n1', { timestamp_utc: '2026-08-06T12:00:10Z' })),
    ).toEqual({ accepted: true });
    clock.advance(1_000);
    expect(
      await service.acceptHeartbeat(heartbeat('n1', { timestamp_utc: '2026-08-06T12:00:05Z' })),
    ).toEqual({ accepted: false, stored_timestamp_utc: '2026-08-06T12:00:10Z' });
  });

  it("keeps a node whose agent's clock went back 10 min listed and current: its next beats are taken", async () => {
    clock.advance(10_000);
    await service.acceptHeartbeat(heartbeat('n1', { timestamp_utc: '2026-08-06T12:00:10Z' }));
    for (let beat = 1; beat <= 6; beat++) {
      clock.advance(10_000);
      const stamp = new Date(Date.UTC(2026, 7, 6, 11, 50, 10) + beat * 10_000).toISOString();
      expect(
        await service.acceptHeartbeat(heartbeat('n1', { timestamp_utc: stamp, ram_used_mb: beat })),
      ).toEqual({ accepted: true });
    }
    clock.advance(10_000);
    expect((await service.getNode('n1')).ram_available_mb).toBe(4096 - 6);
  });

  it('shows last_heartbeat and last_updated on the wall clock, and judges liveness on the other', async () => {
    await service.acceptHeartbeat(heartbeat('n1'));
    clock.stepWall(-3_600_000);
    clock.advance(1_000);
    await service.acceptHeartbeat(heartbeat('n2'));
    const status = await service.fleetStatus();
    expect(status.nodes.map((node) => [node.node_id, node.last_heartbeat])).toEqual([
      ['n1', '2026-08-06T12:00:00.000Z'],
      ['n2', '2026-08-06T11:00:01.000Z'],
    ]);
    expect(status.last_updated).toBe('2026-08-06T11:00:01.000Z');
    clock.advance(30_000);
    expect((await service.listNodes()).map((node) => node.node_id)).toEqual(['n2']);
  });

  describe("a heartbeat's VM ids", () => {
    const vms = (...ids: string[]) => ids.map((id) => vmRecord(id));

    it('are judged without reading every node, at enrollment too', async () => {
      const listAll = jest.spyOn(repository, 'listAll');
      const ownersOf = jest.spyOn(repository, 'ownersOf');
      for (let index = 0; index < 50; index++) {
        await service.acceptHeartbeat(heartbeat(`n${index}`, { vms: vms(`vm-${index}`) }));
      }
      // A node listing another's VM: still ignored, naming the node that holds it.
      await service.acceptHeartbeat(heartbeat('claimer', { vms: vms('vm-7', 'vm-own') }));
      expect(listAll).not.toHaveBeenCalled();
      expect(ownersOf).toHaveBeenCalledTimes(51);
      expect(ownersOf).toHaveBeenLastCalledWith(['vm-7', 'vm-own'], 'claimer');
      expect(logs).toContainEqual(
        expect.stringContaining('lists vm vm-7, which node n7 holds: ignored'),
      );
      expect((await service.getNode('claimer')).vm_count).toBe(1);
      // Its next beat lists only ids it holds or was refused: only the refused one is looked up.
      await service.acceptHeartbeat(heartbeat('claimer', { vms: vms('vm-7', 'vm-own') }));
      expect(ownersOf).toHaveBeenLastCalledWith(['vm-7'], 'claimer');
    });

    it('are claimed for one node in the write itself: two nodes listing a new id at the same instant never both hold it', async () => {
      // Both looked the id up before either heartbeat was stored (two controllers at once).
      jest.spyOn(repository, 'ownersOf').mockResolvedValue(new Map());
      await service.acceptHeartbeat(heartbeat('x', { vms: vms('vm-new', 'vm-x') }));
      await service.acceptHeartbeat(heartbeat('y', { vms: vms('vm-new', 'vm-y') }));
      expect(logs).toContainEqual(
        expect.stringContaining(
          'node y (10.8.0.1 (host y, boot boot-1)) lists vm vm-new, which node x holds: ignored',
        ),
      );
      const held = (await repository.listAll()).map((node) => [
        node.node_id,
        node.vms.map((vm) => vm.vm_id),
      ]);
      expect(held).toEqual([
        ['x', ['vm-new', 'vm-x']],
        ['y', ['vm-y']],
      ]);
      // The store refuses such a write whoever asks for it, naming the holder.
      const stored = (await repository.listAll())[1];
      await expect(
        repository.update('y', () => ({
          next: { ...stored, vms: [...stored.vms, vmRecord('vm-x')] },
          result: undefined,
        })),
      ).rejects.toThrow(new VmIdsHeldElsewhereError('y', new Map([['vm-x', 'x']])));
    });

    it('are taken when the index names another node whose record no longer holds them', async () => {
      const index = new VmHolderIndex();
      repository = new InMemoryNodesRepository(index);
      service = new NodesService(repository, clock, metrics, new NodeTokens());
      await service.acceptHeartbeat(heartbeat('n1', { vms: vms('vm-a') }));
      await service.acceptHeartbeat(heartbeat('n1', { vms: [] }));
      // As an entry left stale would: n1 no longer holds vm-a.
      jest.spyOn(index, 'holdersOf').mockReturnValue(['n1']);
      await service.acceptHeartbeat(heartbeat('n2', { vms: vms('vm-a') }));
      expect((await service.getNode('n2')).vm_count).toBe(1);
      expect(logs.filter((line) => line.includes('ignored'))).toEqual([]);
    });
  });

  describe('a node id used by two agents at once', () => {
    const agentA = { boot_id: 'boot-a', wg_ip: '10.8.0.1', hostname: 'rack1' };
    const agentB = { boot_id: 'boot-b', wg_ip: '10.8.0.2', hostname: 'rack2' };
    const WARNING =
      "node n1 is used by two agents at once: 10.8.0.1 (host rack1, boot boot-a) and 10.8.0.2 (host rack2, boot boot-b) take it from each other at every heartbeat, each replacing the other's record and VMs; give each its own VM_NODE_ID (warned once until neither has taken it from the other for 60 s)";

    /** A and B beating alternately, 5 s apart, `beats` heartbeats in all, A first. */
    async function alternate(beats: number): Promise<void> {
      for (let index = 0; index < beats; index++) {
        clock.advance(5_000);
        await service.acceptHeartbeat(heartbeat('n1', index % 2 === 0 ? agentA : agentB));
      }
    }

    it('is one warning naming both addresses and boot ids, and one count, however many beats', async () => {
      const counted = jest.spyOn(metrics, 'countNodeIdConflict');
      await alternate(12);
      expect(logs).toEqual([
        'node n1 joined from 10.8.0.1 (host rack1, boot boot-a)',
        'node n1 taken over: now 10.8.0.2 (host rack2, boot boot-b), was 10.8.0.1 (host rack1, boot boot-a)',
        WARNING,
      ]);
      expect(counted).toHaveBeenCalledTimes(1);

      // B alone from now on: the episode ends 60 s after the last take-over, in one line.
      logs.length = 0;
      for (let beat = 0; beat < 7; beat++) {
        clock.advance(10_000);
        await service.acceptHeartbeat(heartbeat('n1', agentB));
        await service.dropStaleNodes();
      }
      expect(logs).toEqual([
        'node n1: no longer taken back and forth (10 take-overs in 45 s between 10.8.0.1 (host rack1, boot boot-a) and 10.8.0.2 (host rack2, boot boot-b), none for 60 s)',
      ]);

      // A comes back while B still beats: a new episode, warned and counted again.
      logs.length = 0;
      await alternate(3);
      expect(logs.filter((line) => line.includes('two agents at once'))).toHaveLength(1);
      expect(counted).toHaveBeenCalledTimes(2);
    });

    it('is not an agent that rebooted, nor one that comes back after a minute away', async () => {
      const counted = jest.spyOn(metrics, 'countNodeIdConflict');
      await service.acceptHeartbeat(heartbeat('n1', agentA));
      clock.advance(10_000);
      await service.acceptHeartbeat(heartbeat('n1', { ...agentA, boot_id: 'boot-a2' }));
      clock.advance(10_000);
      await service.acceptHeartbeat(heartbeat('n1', agentB));
      clock.advance(61_000);
      await service.acceptHeartbeat(heartbeat('n1', { ...agentA, boot_id: 'boot-a2' }));
      // A minute away, it had dropped out (swept or not): it joins anew, taking nothing over.
      expect(logs.filter((line) => line.includes('taken over'))).toHaveLength(2);
      expect(logs.filter((line) => line.startsWith('node n1 joined'))).toHaveLength(2);
      expect(logs.filter((line) => line.includes('two agents'))).toEqual([]);
      expect(counted).not.toHaveBeenCalled();
    });
  });
});
