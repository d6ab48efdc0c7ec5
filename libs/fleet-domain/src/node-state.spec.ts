import { heartbeat as agentHeartbeat, vmRecord } from '../../../test/support/heartbeats';
import { NodeHeartbeat } from './wire/node-heartbeat';
import {
  NodeChange,
  NodeState,
  beatIntervalMs,
  earliestHoldDeadline,
  isLive,
  liveSince,
  ramAvailableMb,
  toNodeRecord,
  vmCount,
} from './node-state';
import {
  RamHoldRequest,
  endExpiredHolds,
  forgetSilentVm,
  holdRam,
  noteDispatchFailure,
  recordDispatchedVm,
  releaseHold,
  removeVm,
  silentBeyond,
} from './node-changes';
import { acceptHeartbeat, judgeHeartbeat, nodeStateFromHeartbeat } from './node-heartbeats';
import { findEarlierCreate } from './earlier-create';
import { foreignVms, keepsVmsWhenSilent, listedVms, vmOwnersAmong } from './node-vm-listing';

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

  it("keeps a heartbeat's disk room (its five figures only) beside the record, which keeps eight fields", () => {
    const diskRoom = {
      room_mb: 40_960,
      committed_mb: 1_024,
      committable_mb: 39_936,
      reserve_mb: 2_048,
      overcommit: 1,
    };
    const sent = { ...diskRoom, extra: 'dropped' } as NodeHeartbeat['disk_room'];
    const state = nodeStateFromHeartbeat(heartbeat({ disk_room: sent }), 0);
    expect(state.disk_room).toEqual(diskRoom);
    expect(Object.keys(state.record)).toHaveLength(8);
    expect(nodeStateFromHeartbeat(heartbeat(), 0).disk_room).toBeNull();
    // null is let through as absent by the validation (IsOptional).
    const sentNull = { disk_room: null } as unknown as Partial<NodeHeartbeat>;
    expect(nodeStateFromHeartbeat(heartbeat(sentNull), 0).disk_room).toBeNull();
  });

  it('keeps the copies a node holds, their four fields only, but none said taken after the heartbeat was sent', () => {
    const sent = heartbeat({ timestamp_utc: '2026-12-05T05:00:00Z' });
    const copy = {
      vm_id: 'vm-1',
      source_node_id: 'node-a',
      copied_at: '2026-12-05T04:59:30Z',
      size_bytes: 1_024,
    };
    sent.replicas = [
      { ...copy, extra: 'dropped' } as typeof copy,
      { ...copy, vm_id: 'vm-2', copied_at: '2099-01-01T00:00:00Z' },
      { ...copy, vm_id: 'vm-3', copied_at: '2026-12-05T05:00:00.000000001Z' },
    ];
    expect(nodeStateFromHeartbeat(sent, 0).replicas).toEqual([copy]);
    expect(nodeStateFromHeartbeat(heartbeat(), 0).replicas).toEqual([]);
  });

  it('shows the wall clock at receipt as last_heartbeat, however far the duration clock is from it', () => {
    const wallAt = Date.UTC(2026, 7, 6, 11); // the wall clock was stepped back an hour
    const state = nodeStateFromHeartbeat(heartbeat(), Date.UTC(2026, 7, 6, 12), undefined, wallAt);
    expect(state.received_at_ms).toBe(Date.UTC(2026, 7, 6, 12));
    expect(state.record.last_heartbeat).toBe('2026-08-06T11:00:00.000Z');
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

/** What `change` stores in place of `state`; undefined when it stores nothing. */
function after<T>(state: NodeState, change: NodeChange<T>): NodeState | undefined {
  return change(state).next;
}

/** A hold of `ramMb` taken at `nowMs` (0 unless given), due 15 s later. */
function hold(holdId: string, ramMb: number, requiredFreeMb: number, nowMs = 0): RamHoldRequest {
  return {
    holdId,
    ramMb,
    requiredFreeMb,
    nowMs,
    expiresAtMs: nowMs + 15_000,
    spawnKey: spawnKey(holdId),
  };
}

function spawnKey(seed: string, request = 'r'): string {
  return `${seed.padStart(64, '0')}.${request.padStart(64, '0')}`;
}

describe('RAM holds', () => {
  const HOLD_1024 = hold('h1', 1024, 0);

  it('counts a held VM against the node until a heartbeat lists it', () => {
    const state = nodeStateFromHeartbeat(heartbeat(), 0);
    const held = after(state, holdRam(hold('h1', 1024, 1536), 0));
    expect(held && ramAvailableMb(held)).toBe(5120);
    const dispatched = after(held!, recordDispatchedVm('h1', vm('new', 1024)))!;
    expect(ramAvailableMb(dispatched)).toBe(5120);
    expect(vmCount(dispatched)).toBe(3);

    // Sampled before the spawn: the node's figures do not count the VM yet, the hold does,
    // and the VM its agent accepted stays listed.
    const early = nodeStateFromHeartbeat(heartbeat(), 1_000, dispatched);
    expect(ramAvailableMb(early)).toBe(5120);
    expect(early.vms.map((v) => v.vm_id)).toEqual(['a', 'b', 'new']);

    const listing = nodeStateFromHeartbeat(
      heartbeat({ ram_used_mb: 3072, vms: [vm('a'), vm('b'), vm('new', 1024)] }),
      2_000,
      early,
    );
    expect(ramAvailableMb(listing)).toBe(5120);
    expect(listing.holds).toEqual({});
    expect(listing.vms.map((v) => v.vm_id)).toEqual(['a', 'b', 'new']);
    // Once the hold is over, the heartbeat alone says what runs.
    expect(nodeStateFromHeartbeat(heartbeat(), 3_000, listing).vms.map((v) => v.vm_id)).toEqual([
      'a',
      'b',
    ]);
    const expired = nodeStateFromHeartbeat(heartbeat(), 15_000, early);
    expect([expired.holds, expired.vms.map((v) => v.vm_id)]).toEqual([{}, ['a', 'b']]);
  });

  it('ends a hold in flight when a heartbeat lists a VM spawned with its key, before the answer', () => {
    const held = after(nodeStateFromHeartbeat(heartbeat(), 0), holdRam(HOLD_1024, 0))!;
    const unrelated = nodeStateFromHeartbeat(
      heartbeat({ vms: [{ ...vm('x'), idempotency_key: spawnKey('other') }] }),
      1_000,
      held,
    );
    expect(Object.keys(unrelated.holds)).toEqual(['h1']);
    const listed = nodeStateFromHeartbeat(
      heartbeat({ vms: [{ ...vm('new', 1024), idempotency_key: spawnKey('h1') }] }),
      2_000,
      unrelated,
    );
    expect(listed.holds).toEqual({});
  });

  it('keeps a hold in flight across heartbeats of the same boot until its deadline', () => {
    const state = after(nodeStateFromHeartbeat(heartbeat(), 0), holdRam(HOLD_1024, 0))!;
    const next = nodeStateFromHeartbeat(heartbeat(), 14_999, state);
    expect(ramAvailableMb(next)).toBe(5120);
    expect(nodeStateFromHeartbeat(heartbeat(), 15_000, next).holds).toEqual({});
    expect(nodeStateFromHeartbeat(heartbeat({ boot_id: 'boot-2' }), 1_000, state).holds).toEqual(
      {},
    );
  });

  it('stops counting a hold once its deadline has passed, given the time', () => {
    const state = after(nodeStateFromHeartbeat(heartbeat(), 0), holdRam(HOLD_1024, 0))!;
    expect(ramAvailableMb(state, 14_999)).toBe(5120);
    expect(ramAvailableMb(state, 15_000)).toBe(6144);
    // Without the time (the listings' record), it counts until the sweep ends it.
    expect(ramAvailableMb(state)).toBe(5120);
    expect(earliestHoldDeadline(state)).toBe(15_000);

    const swept = endExpiredHolds(15_000)(state);
    expect(swept.result).toEqual([{ holdId: 'h1', hold: state.holds.h1 }]);
    expect(swept.next?.record.ram_available_mb).toBe(6144);
    expect(earliestHoldDeadline(swept.next!)).toBeNull();
    expect(endExpiredHolds(14_999)(state)).toEqual({ result: [] });
  });

  it('takes a new hold against the RAM free now, ending expired holds on the way', () => {
    const state = after(
      nodeStateFromHeartbeat(heartbeat(), 0),
      holdRam(hold('h1', 5632, 6144), 0),
    )!;
    expect(after(state, holdRam(hold('h2', 1024, 1536, 14_000), 0))).toBeUndefined();
    const later = after(state, holdRam(hold('h2', 1024, 1536, 15_000), 0))!;
    expect(Object.keys(later.holds)).toEqual(['h2']);
  });

  it('refuses a hold when the node no longer has the required RAM free', () => {
    const state = nodeStateFromHeartbeat(heartbeat(), 0);
    expect(after(state, holdRam(hold('h1', 5632, 6144), 0))).toBeDefined();
    expect(after(state, holdRam(hold('h1', 5633, 6145), 0))).toBeUndefined();
  });

  it('gives the RAM back when a hold is released', () => {
    const state = after(nodeStateFromHeartbeat(heartbeat(), 0), holdRam(HOLD_1024, 0))!;
    expect(ramAvailableMb(after(state, releaseHold('h1'))!)).toBe(6144);
  });

  it('drops a destroyed VM and its hold', () => {
    const held = after(nodeStateFromHeartbeat(heartbeat(), 0), holdRam(HOLD_1024, 0))!;
    const dispatched = after(held, recordDispatchedVm('h1', vm('new', 1024)))!;
    const gone = after(dispatched, removeVm('new'))!;
    expect(gone.vms.map((v) => v.vm_id)).toEqual(['a', 'b']);
    expect(ramAvailableMb(gone)).toBe(6144);
  });
});

describe('beat interval', () => {
  function beats(...receivedAt: number[]) {
    let state = nodeStateFromHeartbeat(heartbeat(), receivedAt[0]);
    for (const at of receivedAt.slice(1)) state = nodeStateFromHeartbeat(heartbeat(), at, state);
    return state;
  }

  it('is unknown after one heartbeat, and the gap after two', () => {
    expect(beatIntervalMs(beats(0))).toBeNull();
    expect(beatIntervalMs(beats(0, 10_000))).toBe(10_000);
  });

  it('is not shortened by an extra beat right after a create', () => {
    expect(beatIntervalMs(beats(0, 10_000, 20_000, 21_000, 31_000))).toBe(10_000);
  });

  it('follows the node again once a long gap is four beats behind', () => {
    expect(beatIntervalMs(beats(0, 25_000, 35_000, 45_000, 55_000))).toBe(25_000);
    expect(beatIntervalMs(beats(0, 25_000, 35_000, 45_000, 55_000, 65_000))).toBe(10_000);
  });

  it('starts over with another boot', () => {
    const state = beats(0, 10_000);
    expect(
      beatIntervalMs(nodeStateFromHeartbeat(heartbeat({ boot_id: 'boot-2' }), 20_000, state)),
    ).toBeNull();
  });
});

describe('foreignVms', () => {
  it('names the VMs of a heartbeat whose ids another stored node holds, live or silent, or has a hold for', () => {
    const owner = nodeStateFromHeartbeat(heartbeat({ node_id: 'c', vms: [vm('c1')] }), 0);
    const dropped = nodeStateFromHeartbeat(heartbeat({ node_id: 's', vms: [vm('s1')] }), -60_000);
    const dispatching = holdRam(
      { ...hold('h1', 512, 0), vmId: 'b1' },
      0,
    )(nodeStateFromHeartbeat(heartbeat({ node_id: 'b' }), 0)).next!;
    const stored = [owner, dropped, dispatching];
    const claimed = [vm('c1'), vm('s1'), vm('b1'), vm('a1')];
    const ids = claimed.map((one) => one.vm_id);
    expect(foreignVms(claimed, vmOwnersAmong(stored, ids, 'a'))).toEqual([
      { vm_id: 'c1', owner: 'c' },
      { vm_id: 's1', owner: 's' },
      { vm_id: 'b1', owner: 'b' },
    ]);
    // Its own node's VMs are its own; ids it already held are never foreign.
    expect(vmOwnersAmong(stored, ['c1'], 'c')).toEqual(new Map());
    expect(foreignVms(claimed, vmOwnersAmong([owner], ids, 'a'), new Set(['c1']))).toEqual([]);
  });

  it('names the first of the nodes holding an id, and only the ids asked for', () => {
    const first = nodeStateFromHeartbeat(heartbeat({ node_id: 'x', vms: [vm('v1')] }), 0);
    const second = nodeStateFromHeartbeat(
      heartbeat({ node_id: 'y', vms: [vm('v1'), vm('v2')] }),
      0,
    );
    expect(vmOwnersAmong([first, second], ['v1'], 'a')).toEqual(new Map([['v1', 'x']]));
    expect(vmOwnersAmong([first, second], ['v1', 'v2'], 'x')).toEqual(
      new Map([
        ['v1', 'y'],
        ['v2', 'y'],
      ]),
    );
  });
});

describe('findEarlierCreate', () => {
  const key = spawnKey('k', 'body');

  it('finds the VM the controller dispatched with a key, on the node it was dispatched to', () => {
    const n1 = nodeStateFromHeartbeat(heartbeat({ node_id: 'n1' }), 0);
    const n2 = nodeStateFromHeartbeat(
      heartbeat({ node_id: 'n2', vms: [vm('a'), { ...vm('made'), idempotency_key: key }] }),
      0,
    );
    const dispatched = { spawnKey: key, nodeId: 'n2', vmId: 'made' };
    expect(findEarlierCreate([n1, n2], 0, dispatched)).toMatchObject({
      kind: 'vm',
      node: { node_id: 'n2' },
      vm: { vm_id: 'made' },
      spawn_key: key,
    });
    // Still unresolved, it is the VM all the same once listed.
    expect(
      findEarlierCreate([n1, n2], 0, { ...dispatched, unresolvedUntilMs: 20_000 }),
    ).toMatchObject({ kind: 'vm', vm: { vm_id: 'made' } });
  });

  it('never finds a VM a node merely reports with the key (squatting a guessable key)', () => {
    const squatter = nodeStateFromHeartbeat(
      heartbeat({ node_id: 'n2', vms: [{ ...vm('squat'), idempotency_key: key }] }),
      0,
    );
    // Not when the controller's record names another node or VM.
    for (const dispatched of [
      { spawnKey: key, nodeId: 'n1', vmId: 'squat' },
      { spawnKey: key, nodeId: 'n2', vmId: 'made' },
    ]) {
      expect(findEarlierCreate([squatter], 0, dispatched)).toBeUndefined();
    }
  });

  it('finds an unanswered dispatch in flight on its live node until it resolves, with its hold', () => {
    const held = after(
      nodeStateFromHeartbeat(heartbeat(), 0),
      holdRam({ ...hold('h1', 1024, 0), spawnKey: key, vmId: 'v1' }, 0),
    )!;
    const dispatched = {
      spawnKey: key,
      nodeId: held.node_id,
      vmId: 'v1',
      unresolvedUntilMs: 20_000,
    };
    expect(findEarlierCreate([held], 14_999, dispatched)).toMatchObject({
      kind: 'in-flight',
      hold_id: 'h1',
      vm_id: 'v1',
      spawn_key: key,
    });
    // The hold ended at its deadline: still in flight, without it.
    const late = findEarlierCreate([held], 15_000, dispatched);
    expect(late).toMatchObject({ kind: 'in-flight', vm_id: 'v1' });
    expect(late).not.toHaveProperty('hold_id');
    expect(findEarlierCreate([held], 20_000, dispatched)).toBeUndefined();
    // Resolved (the agent answered) and not listed: gone, whatever the node holds for the key.
    expect(
      findEarlierCreate([held], 0, { spawnKey: key, nodeId: held.node_id, vmId: 'v1' }),
    ).toBeUndefined();
  });

  it('says an unanswered dispatch to a node that is not live is unresolved, until when', () => {
    const silent = nodeStateFromHeartbeat(heartbeat(), 0);
    const dispatched = {
      spawnKey: key,
      nodeId: silent.node_id,
      vmId: 'v1',
      unresolvedUntilMs: 45_000,
    };
    expect(findEarlierCreate([silent], 40_000, dispatched)).toEqual({
      kind: 'unresolved',
      node_id: silent.node_id,
      spawn_key: key,
      until_ms: 45_000,
    });
    expect(findEarlierCreate([], 40_000, dispatched)).toMatchObject({ kind: 'unresolved' });
    expect(findEarlierCreate([silent], 45_000, dispatched)).toBeUndefined();
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

  it('takes an older stamp of the same boot arriving more than 5 s after the stored one: the agent clock went back', () => {
    const stepped = heartbeat({ timestamp_utc: '2026-08-06T11:50:10Z' }); // 10 min back
    expect(judgeHeartbeat(stored, stepped, stampedAt + 5_000).kind).toBe('out-of-order');
    expect(judgeHeartbeat(stored, stepped, stampedAt + 5_001).kind).toBe('refreshed');
    expect(judgeHeartbeat(stored, stepped).kind).toBe('out-of-order');
  });

  it("judges a stamp ahead against the controller's wall clock at receipt, not its duration clock", () => {
    // Duration clock an hour ahead of the wall clock (which was stepped back): the stored stamp
    // was 1 h ahead of the wall clock when it arrived, so it orders nothing.
    const wallAt = stampedAt - 3_600_000;
    const ahead = nodeStateFromHeartbeat(heartbeat(), stampedAt, undefined, wallAt);
    expect(
      judgeHeartbeat(ahead, heartbeat({ timestamp_utc: '2026-08-06T11:00:01Z' }), stampedAt + 1),
    ).toEqual({ kind: 'refreshed' });
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
      trusted.received_at_ms + 2_000,
    )(trusted);
    expect(stale).toEqual({
      next: undefined,
      result: { kind: 'out-of-order', stored_timestamp_utc: trusted.timestamp_utc },
    });

    const later = acceptHeartbeat(heartbeat(), 20_000, 19_000)(stored).next;
    expect(later?.received_at_ms).toBe(20_000);
    expect(later?.received_at_wall_ms).toBe(19_000);
  });

  it('holds RAM on a live node that has room, and on no other', () => {
    const request = hold('h1', 1024, 1536, 10_000);
    const held = holdRam(request, 10_000)(stored);
    expect(held.result).toBe(true);
    expect(held.next && ramAvailableMb(held.next)).toBe(5120);

    const refused = { next: undefined, result: false };
    expect(holdRam(request, 10_001)(stored)).toEqual(refused);
    expect(holdRam(request, 0)(undefined)).toEqual(refused);
    expect(holdRam({ ...request, requiredFreeMb: 6145 }, 0)(stored)).toEqual(refused);
  });

  it('records, releases and removes only on a node still stored', () => {
    const held = holdRam(hold('h1', 1024, 0, 10_000), 0)(stored).next!;
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

  it('keeps failed dispatches across heartbeats of any boot, until a dispatch works', () => {
    const failed = noteDispatchFailure('unreachable', 10_000)(stored).next!;
    const record = failed.dispatch_failures;
    expect(record).toMatchObject({ in_a_row: 1, reason: 'unreachable' });
    // A heartbeat naming a new boot_id (anyone with the node token can send one) clears nothing.
    for (const boot_id of ['boot-1', 'boot-2']) {
      expect(
        nodeStateFromHeartbeat(heartbeat({ boot_id }), 11_000, failed).dispatch_failures,
      ).toEqual(record);
    }
    // A successful dispatch does, in the same store update that records its VM.
    const held = holdRam(hold('h1', 1024, 0, 20_000), 0)(failed).next!;
    const dispatched = recordDispatchedVm('h1', vm('new'))(held).next!;
    expect(dispatched.dispatch_failures).toBeNull();
    expect(dispatched.vms.map((v) => v.vm_id)).toContain('new');
  });
});

describe('a node that drops out while listing VMs', () => {
  // Heard from at 10 s (wall clock 1 000 010 s), two VMs; silent for more than 30 s from 40 s on.
  const stored = nodeStateFromHeartbeat(heartbeat(), 10_000, undefined, 1_000_010_000);
  const later = 40_001;

  it('is live up to 30 s after its last heartbeat, and kept for its VMs only', () => {
    expect(isLive(stored, liveSince(40_000))).toBe(true);
    expect(isLive(stored, liveSince(later))).toBe(false);
    expect(keepsVmsWhenSilent(stored)).toBe(true);
    expect(keepsVmsWhenSilent(nodeStateFromHeartbeat(heartbeat({ vms: [] }), 10_000))).toBe(false);
  });

  it('is enrolled anew by its next heartbeat, which replaces its VMs and carries nothing over', () => {
    const failed = noteDispatchFailure('unreachable', 10_000)(stored).next!;
    const held = holdRam(hold('h1', 1024, 0, 10_000 + 60_000), 0)(failed).next!;
    const vms = [vm('a'), vm('b'), vm('c')];
    const back = acceptHeartbeat(heartbeat({ vms }), later, 1_000_100_000)(held);
    expect(back.result).toEqual({
      kind: 'joined',
      silent: {
        vms: 2,
        last_heartbeat_wall_ms: 1_000_010_000,
        previous: { boot_id: stored.boot_id, wg_ip: stored.wg_ip, hostname: stored.hostname },
        still_silent: [],
      },
    });
    expect(back.next?.vms.map((v) => v.vm_id)).toEqual(['a', 'b', 'c']);
    expect(back.next).toMatchObject({
      holds: {},
      beat_gaps_ms: [],
      dispatch_failures: null,
      silent_vms: [],
    });
    // One that listed no VM joins as any new node.
    const empty = nodeStateFromHeartbeat(heartbeat({ vms: [] }), 10_000);
    expect(acceptHeartbeat(heartbeat(), later)(empty).result).toEqual({ kind: 'joined' });
    // Within its 30 s it is the same node beating again.
    expect(acceptHeartbeat(heartbeat(), 40_000)(stored).result).toEqual({ kind: 'refreshed' });
  });

  it('has a VM forgotten on request only while silent, and is forgotten with its last VM', () => {
    const notBefore = liveSince(later);
    const one = forgetSilentVm('a', notBefore)(stored);
    expect(one.result).toBe('forgotten');
    expect(one.remove).toBeUndefined();
    expect(one.next?.vms.map((v) => v.vm_id)).toEqual(['b']);
    expect(one.next?.record.vm_count).toBe(1);
    expect(one.next?.received_at_ms).toBe(stored.received_at_ms);
    expect(forgetSilentVm('b', notBefore)(one.next)).toEqual({ remove: true, result: 'forgotten' });
    expect(forgetSilentVm('zz', notBefore)(stored)).toEqual({ result: 'unknown' });
    expect(forgetSilentVm('a', notBefore)(undefined)).toEqual({ result: 'unknown' });
    // Back meanwhile: its agent is to be asked instead.
    expect(forgetSilentVm('a', liveSince(40_000))(stored)).toEqual({ result: 'node-live' });
  });

  it('keeps the VMs the next heartbeat under its id does not list, silent, whoever sends it', () => {
    // Another machine (a cloned VM_NODE_ID) takes the id over, listing VM c only.
    const clone = heartbeat({
      vms: [vm('c')],
      wg_ip: '10.0.0.9',
      hostname: 'clone',
      boot_id: 'b2',
    });
    const back = acceptHeartbeat(clone, later, 1_000_100_000)(stored);
    const speaker = { boot_id: stored.boot_id, wg_ip: stored.wg_ip, hostname: stored.hostname };
    expect(back.result).toMatchObject({
      kind: 'joined',
      silent: { vms: 2, previous: speaker },
    });
    const next = back.next!;
    expect(next.vms.map((v) => v.vm_id)).toEqual(['c']);
    expect(next.silent_vms).toEqual([
      { vm: stored.vms[0], silent_since_wall_ms: 1_000_010_000, speaker },
      { vm: stored.vms[1], silent_since_wall_ms: 1_000_010_000, speaker },
    ]);
    // Out of the node's figures: no VM count, no RAM.
    expect(next.record.vm_count).toBe(1);
    expect(next.record.ram_available_mb).toBe(ramAvailableMb(next));
    // Listed as silent, beside the live node's own.
    expect(
      listedVms([next], liveSince(later)).map((l) => [l.vm.vm_id, l.silent_since_wall_ms]),
    ).toEqual([
      ['c', undefined],
      ['a', 1_000_010_000],
      ['b', 1_000_010_000],
    ]);
    // The clone's later beats keep them; one that lists a VM ends its silence (no VM twice).
    const beat = acceptHeartbeat(clone, later + 5_000)(next).next!;
    expect(beat.silent_vms.map((s) => s.vm.vm_id)).toEqual(['a', 'b']);
    const lists = acceptHeartbeat({ ...clone, vms: [vm('c'), vm('a')] }, later + 10_000)(beat);
    expect(lists.next!.silent_vms.map((s) => s.vm.vm_id)).toEqual(['b']);
    // The node dropping out again keeps them; its next heartbeat still does not list them.
    expect(keepsVmsWhenSilent({ vms: [], silent_vms: beat.silent_vms })).toBe(true);
    const again = acceptHeartbeat({ ...clone, vms: [] }, later + 40_000, 1_000_200_000)(beat).next!;
    expect(again.silent_vms.map((s) => [s.vm.vm_id, s.silent_since_wall_ms])).toEqual([
      ['a', 1_000_010_000],
      ['b', 1_000_010_000],
      // Wall clock of the clone's last beat (given none, the receive time).
      ['c', later + 5_000],
    ]);
  });

  it('has a silent VM forgotten on request whether its node is live or not', () => {
    const clone = heartbeat({ vms: [], wg_ip: '10.0.0.9', boot_id: 'b2' });
    const next = acceptHeartbeat(clone, later)(stored).next!;
    const live = liveSince(later);
    const one = forgetSilentVm('a', live)(next);
    expect(one.result).toBe('forgotten');
    expect(one.next!.silent_vms.map((s) => s.vm.vm_id)).toEqual(['b']);
    expect(one.next!.received_at_ms).toBe(next.received_at_ms);
    // The live node is not removed with its last silent VM.
    expect(forgetSilentVm('b', live)(one.next).result).toBe('forgotten');
    expect(forgetSilentVm('b', live)(one.next).remove).toBeUndefined();
    // Silent too, and nothing else listed: the node is forgotten with it.
    expect(forgetSilentVm('b', liveSince(later + 40_000))(one.next)).toEqual({
      remove: true,
      result: 'forgotten',
    });
  });

  it('is listed for a VM only where no live node lists that VM', () => {
    const moved = nodeStateFromHeartbeat(heartbeat({ node_id: 'n2', vms: [vm('a')] }), later);
    const listed = listedVms([stored, moved], liveSince(later));
    expect(listed.map((l) => [l.node.node_id, l.vm.vm_id, l.silent_since_wall_ms])).toEqual([
      ['n2', 'a', undefined],
      ['n1', 'b', 1_000_010_000],
    ]);
  });

  it('is no in-flight create for a key: its VM made with the key is still that VM, marked silent', () => {
    const key = spawnKey('k', 'body');
    const held = holdRam(
      { ...hold('h1', 1024, 0, 10_000), expiresAtMs: 100_000, spawnKey: key, vmId: 'm' },
      0,
    )(stored).next!;
    const pending = {
      spawnKey: key,
      nodeId: held.node_id,
      vmId: 'm',
      unresolvedUntilMs: later + 1,
    };
    expect(findEarlierCreate([held], 39_000, pending)).toMatchObject({ kind: 'in-flight' });
    expect(findEarlierCreate([held], later, pending)).toMatchObject({ kind: 'unresolved' });
    const made = recordDispatchedVm('h1', { ...vm('m'), idempotency_key: key })(held).next!;
    const dispatched = { spawnKey: key, nodeId: made.node_id, vmId: 'm' };
    expect(findEarlierCreate([made], later, dispatched)).toMatchObject({
      kind: 'vm',
      vm: { vm_id: 'm' },
      silent_since_wall_ms: 1_000_010_000,
    });
  });

  it('is forgotten first, beyond the bound, when it is the longest silent', () => {
    const node = (node_id: string, received_at_ms: number) => ({ node_id, received_at_ms });
    const silent = [node('c', 3), node('a', 1), node('b2', 2), node('b1', 2)];
    expect(silentBeyond(silent, 4)).toEqual([]);
    expect(silentBeyond(silent, 2).map((n) => n.node_id)).toEqual(['a', 'b1']);
    expect(silentBeyond(silent, 0).map((n) => n.node_id)).toEqual(['a', 'b1', 'b2', 'c']);
  });
});
