import { heartbeat as agentHeartbeat, vmRecord } from '../../../test/support/heartbeats';
import { NodeHeartbeat } from './wire/node-heartbeat';
import {
  judgeHeartbeat,
  liveSince,
  nodeStateFromHeartbeat,
  ramAvailableMb,
  toNodeRecord,
  vmCount,
  withDispatchedVm,
  withHold,
  withoutHold,
  withoutVm,
} from './node-state';

function vm(vm_id: string, ram_alloc_mb = 512) {
  return vmRecord(vm_id, { ram_alloc_mb });
}

/** Node n1: 8192 MB of which 2048 used, KVM, two 512 MB VMs, one fixed timestamp. */
function heartbeat(extra: Partial<NodeHeartbeat> = {}): NodeHeartbeat {
  return agentHeartbeat({
    node_id: 'n1',
    ram_total_mb: 8192,
    ram_used_mb: 2048,
    kvm_available: true,
    vms: [vm('a'), vm('b')],
    timestamp_utc: '2026-08-06T12:00:00.000000001Z',
    ...extra,
  });
}

describe('node record derivation', () => {
  it('derives ram_available_mb and vm_count from the heartbeat', () => {
    const state = nodeStateFromHeartbeat(heartbeat(), 1_000);
    expect(ramAvailableMb(state)).toBe(6144);
    expect(vmCount(state)).toBe(2);
  });

  it('never lets ram_available_mb go below 0', () => {
    const state = nodeStateFromHeartbeat(heartbeat({ ram_used_mb: 9000 }), 1_000);
    expect(ramAvailableMb(state)).toBe(0);
  });

  it('renders exactly the eight NodeRecord fields, last_heartbeat being the receive time', () => {
    const record = toNodeRecord(nodeStateFromHeartbeat(heartbeat(), Date.UTC(2026, 7, 6, 12)));
    expect(record).toEqual({
      node_id: 'n1',
      hostname: 'host-n1',
      wg_ip: '127.0.0.1',
      ram_available_mb: 6144,
      vm_count: 2,
      kvm_available: true,
      reserved: false,
      last_heartbeat: '2026-08-06T12:00:00.000Z',
    });
  });

  it('defaults spawn_port to the agent default 9204', () => {
    expect(nodeStateFromHeartbeat(heartbeat(), 0).spawn_port).toBe(9204);
    expect(nodeStateFromHeartbeat(heartbeat({ spawn_port: 9300 }), 0).spawn_port).toBe(9300);
  });

  it('is live up to 30 s after the receive time, not after', () => {
    const receivedAt = 0;
    expect(receivedAt >= liveSince(29_900)).toBe(true);
    expect(receivedAt >= liveSince(30_000)).toBe(true);
    expect(receivedAt >= liveSince(30_100)).toBe(false);
  });
});

describe('RAM holds', () => {
  it('counts a held VM against the node until the next heartbeat', () => {
    const state = nodeStateFromHeartbeat(heartbeat(), 0);
    const held = withHold(state, 'h1', 1024, 1536);
    expect(held && ramAvailableMb(held)).toBe(5120);
    const dispatched = withDispatchedVm(held!, 'h1', vm('new', 1024));
    expect(ramAvailableMb(dispatched)).toBe(5120);
    expect(vmCount(dispatched)).toBe(3);

    const next = nodeStateFromHeartbeat(heartbeat({ ram_used_mb: 3072 }), 1_000, dispatched);
    expect(ramAvailableMb(next)).toBe(5120);
    expect(next.holds).toEqual({});
  });

  it('keeps a hold still in flight across a heartbeat of the same boot', () => {
    const state = withHold(nodeStateFromHeartbeat(heartbeat(), 0), 'h1', 1024, 0)!;
    const next = nodeStateFromHeartbeat(heartbeat(), 1_000, state);
    expect(ramAvailableMb(next)).toBe(5120);
  });

  it('refuses a hold when the node no longer has the required RAM free', () => {
    const state = nodeStateFromHeartbeat(heartbeat(), 0);
    expect(withHold(state, 'h1', 5632, 6144)).not.toBeNull();
    expect(withHold(state, 'h1', 5633, 6145)).toBeNull();
  });

  it('gives the RAM back when a hold is released', () => {
    const state = withHold(nodeStateFromHeartbeat(heartbeat(), 0), 'h1', 1024, 0)!;
    expect(ramAvailableMb(withoutHold(state, 'h1'))).toBe(6144);
  });

  it('drops a destroyed VM and its hold', () => {
    const held = withHold(nodeStateFromHeartbeat(heartbeat(), 0), 'h1', 1024, 0)!;
    const dispatched = withDispatchedVm(held, 'h1', vm('new', 1024));
    const gone = withoutVm(dispatched, 'new');
    expect(gone.vms.map((v) => v.vm_id)).toEqual(['a', 'b']);
    expect(ramAvailableMb(gone)).toBe(6144);
  });
});

describe('judgeHeartbeat', () => {
  const stored = nodeStateFromHeartbeat(heartbeat(), 0);

  it('calls an unknown node joined', () => {
    expect(judgeHeartbeat(undefined, heartbeat())).toEqual({ kind: 'joined' });
  });

  it('calls the same agent beating again refreshed', () => {
    expect(
      judgeHeartbeat(stored, heartbeat({ timestamp_utc: '2026-08-06T12:00:10.5Z' })).kind,
    ).toBe('refreshed');
  });

  it('ignores a heartbeat of the same boot older than the stored one, to the nanosecond', () => {
    expect(
      judgeHeartbeat(stored, heartbeat({ timestamp_utc: '2026-08-06T12:00:00.000000000Z' })),
    ).toEqual({ kind: 'out-of-order', stored_timestamp_utc: stored.timestamp_utc });
  });

  it('accepts an older timestamp from another boot: a clock that was wrong is no reason to refuse', () => {
    expect(
      judgeHeartbeat(
        stored,
        heartbeat({ boot_id: 'boot-2', timestamp_utc: '2020-01-01T00:00:00Z' }),
      ),
    ).toEqual({
      kind: 'taken-over',
      previous: { boot_id: 'boot-1', wg_ip: '127.0.0.1', hostname: 'host-n1' },
    });
  });

  it('calls another host speaking for the id a take-over', () => {
    expect(judgeHeartbeat(stored, heartbeat({ wg_ip: '127.0.0.2' })).kind).toBe('taken-over');
  });
});
