import {
  NodeState,
  beatIntervalMs,
  earliestHoldDeadline,
  endExpiredHolds,
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

  it("keeps a hold's tenant (what its quotas count), and reads one of another shape as none", () => {
    const state = heldNode();
    state.holds.h1.tenant = { tenant_id: 'acme', vcpu_count: 2, disk_gb: 10 };
    expect(decodeStoredState(`7\n${encodeStoredNode(state)}`).holds.h1.tenant).toEqual({
      tenant_id: 'acme',
      vcpu_count: 2,
      disk_gb: 10,
    });
    const odd = JSON.parse(JSON.stringify(state)) as Record<string, Record<string, object>>;
    odd.holds.h1 = { ...odd.holds.h1, tenant: { tenant_id: 7 } };
    expect(normaliseStoredState(odd).holds.h1).not.toHaveProperty('tenant');
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
    // Never counted against the node, and due at once for the sweep.
    expect(ramAvailableMb(read, 10_000)).toBe(12_288);
    expect(earliestHoldDeadline(read)).toBe(10_000);
    expect(endExpiredHolds(10_000)(read).result).toEqual([{ holdId: 'old', hold: read.holds.old }]);
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

  /** Today's state as stored, with `change` made to its JSON form. */
  function storedWith(change: (state: Record<string, unknown>) => void): string {
    const state = JSON.parse(JSON.stringify(heldNode())) as Record<string, unknown>;
    change(state);
    return stored(1, state);
  }

  it.each([
    ['a null hold', (s: Record<string, unknown>) => (s.holds = { x: null })],
    ['a hold without ram_mb', (s: Record<string, unknown>) => (s.holds = { x: { vm_id: 'v' } })],
    [
      'a hold whose ram_mb is text',
      (s: Record<string, unknown>) => (s.holds = { x: { ram_mb: '1' } }),
    ],
    [
      'a hold whose vm_id is a number',
      (s: Record<string, unknown>) => (s.holds = { x: { ram_mb: 1, vm_id: 7 } }),
    ],
    [
      'a hold whose deadline is text',
      (s: Record<string, unknown>) => (s.holds = { x: { ram_mb: 1, expires_at_ms: 'soon' } }),
    ],
    ['holds that are a list', (s: Record<string, unknown>) => (s.holds = [{ ram_mb: 1 }])],
    ['a null VM', (s: Record<string, unknown>) => (s.vms = [null])],
    ['a VM that is text', (s: Record<string, unknown>) => (s.vms = ['vm-1'])],
    [
      'a VM without ram_alloc_mb',
      (s: Record<string, unknown>) => (s.vms = [{ ...vmRecord('vm-1'), ram_alloc_mb: undefined }]),
    ],
    [
      'a VM whose host_ports hold null',
      (s: Record<string, unknown>) => (s.vms = [{ ...vmRecord('vm-1'), host_ports: [null] }]),
    ],
    [
      'a VM whose key is a number',
      (s: Record<string, unknown>) => (s.vms = [{ ...vmRecord('vm-1'), idempotency_key: 1 }]),
    ],
    ['a hostname that is not text', (s: Record<string, unknown>) => (s.hostname = null)],
    ['a spawn port that is text', (s: Record<string, unknown>) => (s.spawn_port = '9204')],
    ['kvm_available that is text', (s: Record<string, unknown>) => (s.kvm_available = 'yes')],
  ])('refuses a state with %s rather than fail a rule later with a TypeError', (_what, change) => {
    expect(() => decodeStoredNode(storedWith(change))).toThrow(UnreadableStoredNodeError);
  });

  it('refuses a hold stored under __proto__, which would set the prototype of the holds', () => {
    // JSON.parse makes __proto__ an own key, as a state read from Redis would have it.
    const value = storedWith(() => undefined).replace(
      '"holds":{',
      '"holds":{"__proto__":{"ram_mb":1,"expires_at_ms":99999,"spawn_key":""},',
    );
    expect(() => decodeStoredNode(value)).toThrow(UnreadableStoredNodeError);
    expect(({} as Record<string, unknown>).ram_mb).toBeUndefined();
  });

  it('keeps only the last eight dispatch failures and a short reason, as they are written', () => {
    const at_ms = Array.from({ length: 1000 }, (_, i) => i);
    const read = decodeStoredState(
      storedWith(
        (s) => (s.dispatch_failures = { at_ms, in_a_row: 1000, reason: 'E'.repeat(10_000) }),
      ),
    );
    expect(read.dispatch_failures).toEqual({
      at_ms: [992, 993, 994, 995, 996, 997, 998, 999],
      in_a_row: 1000,
      reason: 'E'.repeat(80),
    });
  });

  it('derives the record again when the stored one has a field of another type', () => {
    const read = decodeStoredState(
      storedWith((s) => (s.record = { ...(s.record as object), ram_available_mb: 'lots' })),
    );
    expect(read.record).toEqual(heldNode().record);
  });

  it('keeps the credential a heartbeat was taken with, and reads none stored (or any other value) as none', () => {
    const own = nodeStateFromHeartbeat(heartbeat({ node_id: 'n1' }), 0, undefined, 0, 'own');
    expect(decodeStoredState(`1\n${encodeStoredNode(own)}`).credential).toBe('own');
    // Older controllers stored none.
    expect(decodeStoredState(storedWith((s) => delete s.credential)).credential).toBeNull();
    for (const value of ['shared', 'previous-secret']) {
      expect(decodeStoredState(storedWith((s) => (s.credential = value))).credential).toBe(value);
    }
    for (const value of ['root', 1, { own: true }]) {
      expect(decodeStoredState(storedWith((s) => (s.credential = value))).credential).toBeNull();
    }
  });

  it("keeps a heartbeat's disk room out of the record, and reads none stored (older controllers, another shape) as none", () => {
    const diskRoom = {
      room_mb: 40_960,
      committed_mb: 1_024,
      committable_mb: 39_936,
      reserve_mb: 2_048,
      overcommit: 1,
    };
    const state = nodeStateFromHeartbeat(heartbeat({ node_id: 'n1', disk_room: diskRoom }), 0);
    const encoded = encodeStoredNode(state);
    expect(decodeStoredState(`1\n${encoded}`).disk_room).toEqual(diskRoom);
    expect(decodeStoredRecord(encoded.split('\n')[0])).not.toHaveProperty('disk_room');
    expect(decodeStoredState(storedWith((s) => delete s.disk_room)).disk_room).toBeNull();
    const other = storedWith((s) => (s.disk_room = { ...diskRoom, room_mb: 'lots' }));
    expect(decodeStoredState(other).disk_room).toBeNull();
  });

  it('keeps the VMs a heartbeat said were fenced out of the record, and reads none stored (older controllers, another shape) as none', () => {
    const state = nodeStateFromHeartbeat(heartbeat({ node_id: 'n1', fenced_vm_ids: ['vm-1'] }), 0);
    const encoded = encodeStoredNode(state);
    expect(decodeStoredState(`1\n${encoded}`).fenced_vm_ids).toEqual(['vm-1']);
    expect(decodeStoredRecord(encoded.split('\n')[0])).not.toHaveProperty('fenced_vm_ids');
    expect(decodeStoredState(storedWith((s) => delete s.fenced_vm_ids)).fenced_vm_ids).toEqual([]);
    const other = storedWith((s) => (s.fenced_vm_ids = [1]));
    expect(decodeStoredState(other).fenced_vm_ids).toEqual([]);
  });

  it('gives a state with beat gaps of another type an unknown interval', () => {
    const read = decodeStoredState(storedWith((s) => (s.beat_gaps_ms = [1, null])));
    expect(read.beat_gaps_ms).toEqual([]);
  });

  it.each([
    ['a record with text for ram_available_mb', { ram_available_mb: 'lots' }],
    ['a record without last_heartbeat', { last_heartbeat: undefined }],
  ])('refuses a record part with %s', (_what, change) => {
    const record = { ...heldNode().record, ...change };
    expect(() => decodeStoredRecord(JSON.stringify(record))).toThrow(UnreadableStoredNodeError);
  });
});
