import { Logger } from '@nestjs/common';
import { FakeClock } from '../../../../test/support/fake-clock';
import { heartbeat, vmRecord } from '../../../../test/support/heartbeats';
import { FleetMetrics } from '../metrics/fleet-metrics.service';
import { InMemoryNodesRepository } from './memory/in-memory-nodes.repository';
import { InMemoryVmMoves } from './memory/in-memory-vm-moves.repository';
import { NodeTokens } from './node-tokens';
import { NodesService } from './nodes.service';
import { decodeVmMove, encodeVmMove } from './vm-moves.repository';

const VM = 'vm-00000000000000a1';

describe('VmMoves', () => {
  it('encodes a move as its node and time, and reads back only what it wrote', () => {
    const move = { nodeId: 'node-b', atWallMs: 1_796_000_000_123 };
    expect(decodeVmMove(encodeVmMove(move))).toEqual(move);
    for (const text of [null, '', 'node-b', 'node-b\nsoon', 'node-b\n1\nmore', '\n1']) {
      expect(decodeVmMove(text)).toBeUndefined();
    }
  });

  it('keeps the last move of each VM, in memory, and says when it keeps none', async () => {
    const moves = new InMemoryVmMoves();
    expect(moves.noneRecorded()).toBe(true);
    await moves.record(VM, { nodeId: 'node-b', atWallMs: 1 });
    expect(moves.noneRecorded()).toBe(false);
    await moves.record(VM, { nodeId: 'node-c', atWallMs: 2 });
    expect(await moves.movesOf([VM, 'vm-other'])).toEqual(
      new Map([[VM, { nodeId: 'node-c', atWallMs: 2 }]]),
    );
  });

  it("answers a heartbeat listing a VM moved to another node with superseded_vm_ids, and its new node's without", async () => {
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    const moves = new InMemoryVmMoves();
    const service = new NodesService(
      new InMemoryNodesRepository(),
      new FakeClock(),
      new FleetMetrics(),
      new NodeTokens(),
      moves,
    );
    await moves.record(VM, { nodeId: 'node-b', atWallMs: Date.UTC(2026, 11, 5) });
    const old = heartbeat({ node_id: 'node-a', vms: [vmRecord(VM), vmRecord('vm-kept')] });
    expect(await service.acceptHeartbeat(old, undefined, '127.0.0.1')).toEqual({
      accepted: true,
      superseded_vm_ids: [VM],
    });
    const current = heartbeat({ node_id: 'node-b', vms: [vmRecord(VM)] });
    expect(await service.acceptHeartbeat(current, undefined, '127.0.0.1')).toEqual({
      accepted: true,
    });
    jest.restoreAllMocks();
  });
});
