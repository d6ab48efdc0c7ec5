import { heartbeat, vmRecord } from '../../../test/support/heartbeats';
import { liveSince } from './node-state';
import { nodeStateFromHeartbeat } from './node-heartbeats';
import { copiesHeld, copiesOf, copyFieldsOf, freshestCopy } from './vm-copy-status';
import type { HeartbeatReplica } from './wire/vm-copies';

const NOW = 1_000_000;

function replica(vm_id: string, source_node_id: string, copied_at: string): HeartbeatReplica {
  return { vm_id, source_node_id, copied_at, size_bytes: 1024 };
}

function node(node_id: string, replicas: HeartbeatReplica[], receivedAtMs = NOW) {
  // Sent after every copy it lists: a copy from after its heartbeat is not believed.
  const timestamp_utc = '2026-08-06T12:02:00Z';
  return nodeStateFromHeartbeat(heartbeat({ node_id, replicas, timestamp_utc }), receivedAtMs);
}

describe('copies of a VM on other nodes', () => {
  const nodes = [
    node('a', [replica('vm-1', 'src', '2026-08-06T12:00:10Z')]),
    node('b', [
      replica('vm-1', 'src', '2026-08-06T12:00:40.5Z'),
      replica('vm-2', 'src', '2026-08-06T12:00:00Z'),
    ]),
    // Fresher, but its node dropped out: nothing says the copy is still there.
    node('silent', [replica('vm-1', 'src', '2026-08-06T12:01:00Z')], NOW - 31_000),
    // Sent by a node that ran vm-1 before: not a copy of it as it runs now.
    node('c', [replica('vm-1', 'old-node', '2026-08-06T12:00:50Z')]),
    // A copy a node says it holds of its own VM protects nothing.
    node('src', [replica('vm-1', 'src', '2026-08-06T12:00:55Z')]),
  ];
  const held = copiesHeld(nodes, liveSince(NOW));

  it("takes the freshest copy a live node other than the VM's holds, sent by the VM's node", () => {
    expect(freshestCopy(held, 'vm-1', 'src')).toEqual({
      vm_id: 'vm-1',
      node_id: 'b',
      source_node_id: 'src',
      copied_at: '2026-08-06T12:00:40.5Z',
      size_bytes: 1024,
    });
    expect(freshestCopy(held, 'vm-1', 'elsewhere')).toBeUndefined();
    expect(freshestCopy(held, 'vm-3', 'src')).toBeUndefined();
  });

  it("never takes a copy held on the VM's own node (restored onto the node that held it)", () => {
    expect(freshestCopy(held, 'vm-1', 'old-node')?.node_id).toBe('c');
    expect(
      freshestCopy(
        copiesHeld([node('c', [replica('vm-9', 'd', '2026-08-06T12:00:00Z')])], 0),
        'vm-9',
        'c',
      ),
    ).toBeUndefined();
  });

  it('lists every copy on another live node, whoever sent it, freshest first', () => {
    expect(
      copiesOf(held, 'vm-1', 'src').map(({ node_id, source_node_id }) => [node_id, source_node_id]),
    ).toEqual([
      ['c', 'old-node'],
      ['b', 'src'],
      ['a', 'src'],
    ]);
    expect(copiesOf(held, 'vm-1', 'c').map(({ node_id }) => node_id)).toEqual(['b', 'a']);
  });

  it('compares stamps as times, not as text (offsets, fractions)', () => {
    const offsets = copiesHeld(
      [
        node('x', [replica('vm-1', 's', '2026-08-06T13:00:00+02:00')]),
        node('y', [replica('vm-1', 's', '2026-08-06T11:30:00.000000001Z')]),
      ],
      0,
    );
    expect(freshestCopy(offsets, 'vm-1', 's')?.node_id).toBe('y');
  });

  it('shows null fields for a VM that has a policy and no copy, and none for an untracked VM', () => {
    const tracked = { ...vmRecord('vm-3'), copies: { count: 1, every_s: 60 } };
    expect(copyFieldsOf(held, tracked, 'src')).toEqual({ copied_at: null, copy_node_id: null });
    expect(copyFieldsOf(held, vmRecord('vm-3'), 'src')).toBeUndefined();
    // A copy held is shown even from an agent that reports no policy.
    expect(copyFieldsOf(held, vmRecord('vm-2'), 'src')).toEqual({
      copied_at: '2026-08-06T12:00:00Z',
      copy_node_id: 'b',
    });
  });
});
