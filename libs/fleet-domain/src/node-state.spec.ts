import { heartbeat as agentHeartbeat, vmRecord } from '../../../test/support/heartbeats';
import { NodeHeartbeat } from './wire/node-heartbeat';
import {
  acceptHeartbeat,
  holdRam,
  judgeHeartbeat,
  liveSince,
  nodeStateFromHeartbeat,
  ramAvailableMb,
  recordDispatchedVm,
  releaseHold,
  removeVm,
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
  const HOLD_1024 = { holdId: 'h1', ramMb: 1024, requiredFreeMb: 0 };

  it('counts a held VM against the node until the next heartbeat', () => {
    const state = nodeStateFromHeartbeat(heartbeat(), 0);
    const held = withHold(state, { holdId: 'h1', ramMb: 1024, requiredFreeMb: 1536 });
    expect(held && ramAvailableMb(held)).toBe(5120);
    const dispatched = withDispatchedVm(held!, 'h1', vm('new', 1024));
    expect(ramAvailableMb(dispatched)).toBe(5120);
    expect(vmCount(dispatched)).toBe(3);

    const next = nodeStateFromHeartbeat(heartbeat({ ram_used_mb: 3072 }), 1_000, dispatched);
    expect(ramAvailableMb(next)).toBe(5120);
    expect(next.holds).toEqual({});
  });

  it('keeps a hold still in flight across a heartbeat of the same boot', () => {
    const state = withHold(nodeStateFromHeartbeat(heartbeat(), 0), HOLD_1024)!;
    const next = nodeStateFromHeartbeat(heartbeat(), 1_000, state);
    expect(ramAvailableMb(next)).toBe(5120);
  });

  it('refuses a hold when the node no longer has the required RAM free', () => {
    const state = nodeStateFromHeartbeat(heartbeat(), 0);
    expect(withHold(state, { holdId: 'h1', ramMb: 5632, requiredFreeMb: 6144 })).not.toBeNull();
    expect(withHold(state, { holdId: 'h1', ramMb: 5633, requiredFreeMb: 6145 })).toBeNull();
  });

  it('gives the RAM back when a hold is released', () => {
    const state = withHold(nodeStateFromHeartbeat(heartbeat(), 0), HOLD_1024)!;
    expect(ramAvailableMb(withoutHold(state, 'h1'))).toBe(6144);
  });

  it('drops a destroyed VM and its hold', () => {
    const held = withHold(nodeStateFromHeartbeat(heartbeat(), 0), HOLD_1024)!;
    const dispatched = withDispatchedVm(held, 'h1', vm('new', 1024));
    const gone = withoutVm(dispatched, 'new');
    expect(gone.vms.map((v) => v.vm_id)).toEqual(['a', 'b']);
    expect(ramAvailableMb(gone)).toBe(6144);
  });
});

describe('judgeHeartbeat', () => {
  // Received when it was stamped: the agent's clock agrees with the controller's.
  const stampedAt = Date.UTC(2026, 7, 6, 12, 0, 0);
  const stored = nodeStateFromHeartbeat(heartbeat(), stampedAt);

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

  it('keeps ordering by a stamp ahead of the receive time by less than the 2 s NTP allowance', () => {
    const ahead = nodeStateFromHeartbeat(
      heartbeat({ timestamp_utc: '2026-08-06T12:00:01.900Z' }),
      stampedAt,
    );
    expect(
      judgeHeartbeat(ahead, heartbeat({ timestamp_utc: '2026-08-06T12:00:01.500Z' })).kind,
    ).toBe('out-of-order');
  });

  it('does not let a stamp that was far ahead on arrival hold back the next heartbeats of its boot', () => {
    const forged = nodeStateFromHeartbeat(
      heartbeat({
        wg_ip: '10.8.0.66',
        hostname: 'forged',
        timestamp_utc: '9999-12-31T23:59:59.999999999Z',
      }),
      stampedAt,
    );
    const real = heartbeat({ timestamp_utc: '2026-08-06T12:00:10.000000001Z' });
    expect(judgeHeartbeat(forged, real)).toEqual({
      kind: 'taken-over',
      previous: { boot_id: 'boot-1', wg_ip: '10.8.0.66', hostname: 'forged' },
    });

    // Once the real agent's stamp is stored, its delayed retries are ordered again.
    const restored = nodeStateFromHeartbeat(real, stampedAt + 10_000, forged);
    expect(
      judgeHeartbeat(restored, heartbeat({ timestamp_utc: '2026-08-06T12:00:05Z' })).kind,
    ).toBe('out-of-order');
  });

  it('trusts a stamp 2.5 s ahead no more than a far-future one', () => {
    const ahead = nodeStateFromHeartbeat(
      heartbeat({ timestamp_utc: '2026-08-06T12:00:02.500Z' }),
      stampedAt,
    );
    expect(judgeHeartbeat(ahead, heartbeat({ timestamp_utc: '2026-08-06T12:00:01Z' })).kind).toBe(
      'refreshed',
    );
  });
});

describe('node changes', () => {
  const stored = nodeStateFromHeartbeat(heartbeat(), 10_000);

  it('stores a heartbeat with its verdict, and stores nothing for one out of order', () => {
    const joined = acceptHeartbeat(heartbeat(), 1_000)(undefined);
    expect(joined.result).toEqual({ kind: 'joined' });
    expect(joined.next?.received_at_ms).toBe(1_000);

    // Received when it was stamped, so its stamp is trusted for ordering.
    const trusted = nodeStateFromHeartbeat(heartbeat(), Date.parse(heartbeat().timestamp_utc));
    const stale = acceptHeartbeat(
      heartbeat({ timestamp_utc: '2026-08-06T11:59:59Z', ram_used_mb: 1 }),
      trusted.received_at_ms + 10_000,
    )(trusted);
    expect(stale).toEqual({
      next: undefined,
      result: { kind: 'out-of-order', stored_timestamp_utc: trusted.timestamp_utc },
    });
  });

  it('holds RAM on a live node that has room, and on no other', () => {
    const hold = { holdId: 'h1', ramMb: 1024, requiredFreeMb: 1536 };
    const held = holdRam(hold, 10_000)(stored);
    expect(held.result).toBe(true);
    expect(held.next && ramAvailableMb(held.next)).toBe(5120);

    const refused = { next: undefined, result: false };
    expect(holdRam(hold, 10_001)(stored)).toEqual(refused);
    expect(holdRam(hold, 0)(undefined)).toEqual(refused);
    expect(holdRam({ ...hold, requiredFreeMb: 6145 }, 0)(stored)).toEqual(refused);
  });

  it('records, releases and removes only on a node still stored', () => {
    const held = holdRam({ holdId: 'h1', ramMb: 1024, requiredFreeMb: 0 }, 0)(stored).next!;
    expect(recordDispatchedVm('h1', vm('new'))(held).next?.vms.map((v) => v.vm_id)).toEqual([
      'a',
      'b',
      'new',
    ]);
    expect(ramAvailableMb(releaseHold('h1')(held).next!)).toBe(6144);
    expect(removeVm('a')(stored).next?.vms.map((v) => v.vm_id)).toEqual(['b']);
    for (const change of [recordDispatchedVm('h1', vm('new')), releaseHold('h1'), removeVm('a')]) {
      expect(change(undefined)).toEqual({ next: undefined, result: undefined });
    }
  });
});
