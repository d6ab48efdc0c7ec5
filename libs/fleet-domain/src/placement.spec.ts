import { PlacementCandidate, placeVm } from './placement';

function node(node_id: string, ram_available_mb: number, extra: Partial<PlacementCandidate> = {}) {
  return { node_id, ram_available_mb, kvm_available: false, reserved: false, ...extra };
}

const plain = { prefer_kvm: false };

describe('placeVm', () => {
  describe('safety margin of 512 MB', () => {
    it('fits 512 MB on a node with exactly 1024 MB free', () => {
      expect(placeVm({ ...plain, ram_mb: 512 }, [node('a', 1024)])).toEqual({
        kind: 'placed',
        node_id: 'a',
        required_free_mb: 1024,
      });
    });

    it('does not fit 513 MB on a node with 1024 MB free', () => {
      const placement = placeVm({ ...plain, ram_mb: 513 }, [node('a', 1024)]);
      expect(placement.kind).toBe('no-capacity');
      expect(placement.kind === 'no-capacity' && placement.message).toContain('1025 MB');
    });
  });

  it('picks the node with the most free RAM', () => {
    const nodes = [node('small', 2048), node('big', 8192), node('mid', 4096)];
    expect(placeVm({ ...plain, ram_mb: 256 }, nodes)).toMatchObject({ node_id: 'big' });
  });

  it('breaks ties by the smallest node id, whatever the listing order', () => {
    const nodes = [node('n-c', 4096), node('n-a', 4096), node('n-b', 4096)];
    expect(placeVm({ ...plain, ram_mb: 256 }, nodes)).toMatchObject({ node_id: 'n-a' });
    expect(placeVm({ ...plain, ram_mb: 256 }, [...nodes].reverse())).toMatchObject({
      node_id: 'n-a',
    });
  });

  describe('prefer_kvm', () => {
    it('lets a KVM node with enough RAM win over a non-KVM node with more', () => {
      const nodes = [node('tcg', 16384), node('kvm', 2048, { kvm_available: true })];
      expect(placeVm({ ram_mb: 1024, prefer_kvm: true }, nodes)).toMatchObject({
        node_id: 'kvm',
      });
    });

    it('falls back to a non-KVM node when no KVM node has room', () => {
      const nodes = [node('tcg', 16384), node('kvm', 1024, { kvm_available: true })];
      expect(placeVm({ ram_mb: 1024, prefer_kvm: true }, nodes)).toMatchObject({
        node_id: 'tcg',
      });
    });

    it('is ignored when false: most free RAM wins', () => {
      const nodes = [node('tcg', 16384), node('kvm', 2048, { kvm_available: true })];
      expect(placeVm({ ram_mb: 1024, prefer_kvm: false }, nodes)).toMatchObject({
        node_id: 'tcg',
      });
    });

    it('picks the KVM node with the most RAM among KVM nodes', () => {
      const nodes = [
        node('kvm-small', 4096, { kvm_available: true }),
        node('kvm-big', 8192, { kvm_available: true }),
        node('tcg', 65536),
      ];
      expect(placeVm({ ram_mb: 1024, prefer_kvm: true }, nodes)).toMatchObject({
        node_id: 'kvm-big',
      });
    });
  });

  describe('reserved nodes', () => {
    it('are skipped while a non-reserved node fits, even with far more RAM', () => {
      const nodes = [node('reserved', 65536, { reserved: true }), node('normal', 2048)];
      expect(placeVm({ ...plain, ram_mb: 1024 }, nodes)).toMatchObject({ node_id: 'normal' });
    });

    it('are used as a last resort when they are all there is', () => {
      const nodes = [node('reserved', 4096, { reserved: true })];
      expect(placeVm({ ...plain, ram_mb: 1024 }, nodes)).toMatchObject({ node_id: 'reserved' });
    });

    it('are used when every non-reserved node is short of RAM', () => {
      const nodes = [
        node('normal-1', 1500),
        node('normal-2', 1535),
        node('reserved-small', 2048, { reserved: true }),
        node('reserved-big', 4096, { reserved: true }),
      ];
      expect(placeVm({ ...plain, ram_mb: 1024 }, nodes)).toMatchObject({
        node_id: 'reserved-big',
      });
    });

    it('a non-KVM non-reserved node beats a reserved KVM node even with prefer_kvm', () => {
      const nodes = [
        node('kvm-reserved', 8192, { kvm_available: true, reserved: true }),
        node('tcg', 2048),
      ];
      expect(placeVm({ ram_mb: 1024, prefer_kvm: true }, nodes)).toMatchObject({ node_id: 'tcg' });
    });
  });

  it('answers no-capacity for an empty fleet', () => {
    expect(placeVm({ ...plain, ram_mb: 64 }, []).kind).toBe('no-capacity');
  });

  describe('preferred_node', () => {
    it('places on the preferred node without the margin, even when another has more RAM', () => {
      const nodes = [node('big', 65536), node('wanted', 1024)];
      expect(placeVm({ ...plain, ram_mb: 1024, preferred_node: 'wanted' }, nodes)).toEqual({
        kind: 'placed',
        node_id: 'wanted',
        required_free_mb: 1024,
      });
    });

    it('is honoured even when the node is reserved', () => {
      const nodes = [node('big', 65536), node('wanted', 4096, { reserved: true })];
      expect(placeVm({ ...plain, ram_mb: 1024, preferred_node: 'wanted' }, nodes)).toMatchObject({
        node_id: 'wanted',
      });
    });

    it('refuses, naming the node, when it is not listed; no other node is considered', () => {
      const placement = placeVm({ ...plain, ram_mb: 64, preferred_node: 'ghost' }, [
        node('big', 65536),
      ]);
      expect(placement.kind).toBe('preferred-node-unfit');
      expect(placement.kind !== 'placed' && placement.message).toContain('ghost');
    });

    it('refuses, naming the node, when it is short of RAM', () => {
      const placement = placeVm({ ...plain, ram_mb: 1025, preferred_node: 'wanted' }, [
        node('wanted', 1024),
        node('big', 65536),
      ]);
      expect(placement.kind).toBe('preferred-node-unfit');
      expect(placement.kind !== 'placed' && placement.message).toContain('wanted');
    });

    it('null means no preference', () => {
      expect(
        placeVm({ ...plain, ram_mb: 64, preferred_node: null }, [node('a', 2048)]),
      ).toMatchObject({ node_id: 'a' });
    });
  });
});
