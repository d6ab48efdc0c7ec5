import { CopyPeerCandidate, chooseCopyPeers } from './copy-placement';

function node(node_id: string, overrides: Partial<CopyPeerCandidate> = {}): CopyPeerCandidate {
  return {
    node_id,
    live: true,
    committable_mb: 100_000,
    replicas_held: 0,
    reserved: false,
    ...overrides,
  };
}

const request = (overrides: Partial<Parameters<typeof chooseCopyPeers>[0]> = {}) => ({
  vm_node_id: 'node-a',
  count: 1,
  needed_mb: 10_240,
  current: [],
  ...overrides,
});

describe('chooseCopyPeers', () => {
  it("never chooses the VM's own node: a fleet of one node copies nowhere", () => {
    expect(chooseCopyPeers(request(), [node('node-a')])).toEqual([]);
  });

  it('passes over silent nodes, nodes without room for the disk, and nodes that report no room', () => {
    expect(
      chooseCopyPeers(request({ count: 2 }), [
        node('node-a'),
        node('node-b', { live: false }),
        node('node-c', { committable_mb: 10_239 }),
        node('node-d', { committable_mb: null }),
        node('node-e', { committable_mb: 10_240 }),
      ]),
    ).toEqual(['node-e']);
  });

  it('spreads copies: the node holding the fewest first, then not reserved, then the most room, then the id', () => {
    const fleet = [
      node('node-b', { replicas_held: 3 }),
      node('node-c', { replicas_held: 1, committable_mb: 20_000 }),
      node('node-d', { replicas_held: 1, committable_mb: 50_000 }),
      node('node-e', { replicas_held: 0, reserved: true }),
      node('node-f', { replicas_held: 0 }),
    ];
    expect(chooseCopyPeers(request({ count: 2 }), fleet)).toEqual(['node-f', 'node-e']);
    expect(chooseCopyPeers(request({ count: 2 }), fleet.slice(0, 3))).toEqual(['node-d', 'node-c']);
    expect(chooseCopyPeers(request(), [node('node-c'), node('node-b')])).toEqual(['node-b']);
  });

  it('keeps the current holders while they are live and fit, even when another holds fewer', () => {
    const fleet = [node('node-b', { replicas_held: 9 }), node('node-c')];
    expect(chooseCopyPeers(request({ current: ['node-b'] }), fleet)).toEqual(['node-b']);
    expect(
      chooseCopyPeers(request({ current: ['node-b'] }), [
        node('node-b', { live: false }),
        node('node-c'),
      ]),
    ).toEqual(['node-c']);
    expect(
      chooseCopyPeers(request({ current: ['node-b'], count: 2 }), [...fleet, node('node-d')]),
    ).toEqual(['node-b', 'node-c']);
  });

  it('chooses none for a count of 0, and no more than the count', () => {
    expect(chooseCopyPeers(request({ count: 0 }), [node('node-b')])).toEqual([]);
    expect(
      chooseCopyPeers(request({ count: 1, current: ['node-b', 'node-c'] }), [
        node('node-b'),
        node('node-c'),
      ]),
    ).toEqual(['node-b']);
  });
});
