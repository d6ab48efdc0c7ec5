import { NodeState, placementCandidate } from '@app/fleet-domain';
import { nodeState } from '../../../../test/factories/node-state.factory';
import { consoleNode } from './console.service';

const NOW_MS = 1_000_000;
const WALL_MS = Date.UTC(2026, 7, 6, 12, 0, 0);

/** Node n1 (desk-01) heard 2 s ago. */
function stored(overrides: Partial<NodeState> = {}): NodeState {
  return nodeState({
    received_at_ms: NOW_MS - 2_000,
    received_at_wall_ms: WALL_MS - 2_000,
    ...overrides,
  });
}

function shown(node: NodeState, live = true) {
  return consoleNode(node, NOW_MS, WALL_MS, live, live ? [placementCandidate(node, NOW_MS)] : []);
}

describe("the console's view of a stored node", () => {
  it('shows RAM, heartbeat age and no reason for a node placement takes', () => {
    expect(shown(stored())).toMatchObject({
      ram_total_mb: 16384,
      ram_used_mb: 4096,
      heartbeat_age_s: 2,
      last_heartbeat: '2026-08-06T11:59:58.000Z',
      live: true,
      late: false,
      passed_over: null,
    });
  });

  it('shows the disk room its last heartbeat reported, null when it reported none', () => {
    const diskRoom = {
      room_mb: 40_960,
      committed_mb: 0,
      committable_mb: 40_960,
      reserve_mb: 2_048,
      overcommit: 1,
    };
    expect(shown(stored({ disk_room: diskRoom })).disk_room).toEqual(diskRoom);
    expect(shown(stored()).disk_room).toBeNull();
  });

  it("is late past two missed heartbeats, in placement's words", () => {
    const late = shown(stored({ received_at_ms: NOW_MS - 11_000 }));
    expect(late.late).toBe(true);
    expect(late.passed_over).toBe('missed 2 heartbeats (silent 11.0 s, beats every 5.0 s)');
  });

  it('says why a full or reserved node is passed over', () => {
    expect(shown(stored({ ram_used_mb: 16000 })).passed_over).toBe(
      'has 384 MB available: a VM needs its ram_mb + 512 MB',
    );
    expect(shown(stored({ reserved: true })).passed_over).toBe(
      'reserved, used only when no other node fits',
    );
  });

  it('marks a silent node kept for its VMs, out of placement', () => {
    const silent = shown(
      stored({ received_at_ms: NOW_MS - 60_000, received_at_wall_ms: WALL_MS - 60_000 }),
      false,
    );
    expect(silent.live).toBe(false);
    expect(silent.late).toBe(false);
    expect(silent.passed_over).toBe(
      'silent since 2026-08-06T11:59:00.000Z (60 s): out of placement until its agent heartbeats again',
    );
  });
});
