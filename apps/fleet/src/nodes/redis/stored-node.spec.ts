import {
  NodeState,
  beatIntervalMs,
  earliestHoldDeadline,
  endExpiredHolds,
  findEarlierCreate,
  holdRam,
  nodeStateFromHeartbeat,
  ramAvailableMb,
} from '@app/fleet-domain';
import { heartbeat, vmRecord } from '../../../../../test/support/heartbeats';
import {
  UnreadableStoredNodeError,
  decodeStoredNode,
  decodeStoredRecord,
  decodeStoredState,
  encodeStoredNode,
  normaliseStoredState,
} from './stored-node';

const SPAWN_KEY = `${'a'.repeat(64)}.${'b'.repeat(64)}`;

/** Node n1 (16384 MB, 4096 used) received at 10 s, holding 1024 MB until 25 s. */
function heldNode(): NodeState {
  const state = nodeStateFromHeartbeat(
    heartbeat({ node_id: 'n1', vms: [vmRecord('vm-1')] }),
    10_000,
  );
  const request = {
    holdId: 'h1',
    ramMb: 1024,
    requiredFreeMb: 0,
    nowMs: 10_000,
    expiresAtMs: 25_000,
    spawnKey: SPAWN_KEY,
  };
  return holdRam(request, 0)(state).next!;
}

/** A key's value as Redis holds it: the write script puts the version first. */
function stored(version: number, value: unknown, record: unknown = {}): string {
  return `${version}\n${JSON.stringify(record)}\n${JSON.stringify(value)}`;
}

/** A state as a controller from before hold deadlines and beat gaps stored it. */
function olderControllersState(): Record<string, unknown> {
  const { beat_gaps_ms: _gaps, ...state } = JSON.parse(JSON.stringify(heldNode())) as NodeState;
  return { ...state, holds: { old: { ram_mb: 4096, vm_id: 'vm-1' } } };
}

describe('stored node (Redis)', () => {
  it('reads back what it wrote, with the version the write script put first', () => {
    const state = heldNode();
    const { version, state: read } = decodeStoredNode(`7\n${encodeStoredNode(state)}`);
    expect(version).toBe('7');
    expect(read).toEqual(state);
    expect(decodeStoredState(`7\n${encodeStoredNode(state)}`)).toEqual(state);
  });

  it('reads no state and an empty version for a node that is not stored', () => {
    expect(decodeStoredNode(null)).toEqual({ version: '' });
  });

  it('reads the record part alone as the listings show it', () => {
    const state = heldNode();
    const [recordPart] = encodeStoredNode(state).split('\n');
    expect(decodeStoredRecord(recordPart)).toEqual(state.record);
  });

  it('gives a state stored without beat gaps an unknown interval, then follows the next beats', () => {
    const read = decodeStoredState(stored(3, olderControllersState()));
    expect(read.beat_gaps_ms).toEqual([]);
    expect(beatIntervalMs(read)).toBeNull();
    const next = nodeStateFromHeartbeat(heartbeat({ node_id: 'n1' }), 20_000, read);
    expect(beatIntervalMs(next)).toBe(10_000);
  });

  it('ends a hold stored without a deadline or key as of the heartbeat it was stored with', () => {
    const read = decodeStoredState(stored(3, olderControllersState()));
    expect(read.holds.old).toEqual({
      ram_mb: 4096,
      expires_at_ms: 10_000,
      spawn_key: '',
      vm_id: 'vm-1',
    });
    // Never counted against the node, due at once for the sweep, and no create in flight.
    expect(ramAvailableMb(read, 10_000)).toBe(12_288);
    expect(earliestHoldDeadline(read)).toBe(10_000);
    expect(endExpiredHolds(10_000)(read).result).toEqual([{ holdId: 'old', hold: read.holds.old }]);
    expect(findEarlierCreate([read], '', 10_000)).toBeUndefined();
  });

  it('keeps the record as stored, and derives one for a state stored without it', () => {
    const older = olderControllersState();
    expect(decodeStoredState(stored(1, older)).record).toEqual(older.record);
    const { record: _record, ...withoutRecord } = older;
    expect(decodeStoredState(stored(1, withoutRecord)).record).toMatchObject({
      node_id: 'n1',
      vm_count: 1,
      last_heartbeat: '1970-01-01T00:00:10.000Z',
    });
  });

  it('reads a state stored without holds as holding nothing', () => {
    const { holds: _holds, ...withoutHolds } = olderControllersState();
    expect(normaliseStoredState(withoutHolds).holds).toEqual({});
  });

  it.each([
    ['a value without the version and record lines', '{"node_id":"n1"}'],
    ['a state that is not JSON', '1\n{}\n{"node_id":'],
    ['a state without node_id', stored(1, { received_at_ms: 1, vms: [] })],
    ['a state without received_at_ms', stored(1, { node_id: 'n1', vms: [] })],
    ['a state that is not an object', stored(1, ['n1'])],
  ])('refuses %s', (_what, value) => {
    expect(() => decodeStoredNode(value)).toThrow(UnreadableStoredNodeError);
  });

  it('refuses a record part without node_id', () => {
    expect(() => decodeStoredRecord('{"hostname":"h"}')).toThrow(UnreadableStoredNodeError);
  });
});
