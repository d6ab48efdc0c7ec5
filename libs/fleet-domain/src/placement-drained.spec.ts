import { PlacementCandidate, drainedReason, placeVm } from './placement';

function node(node_id: string, ram_available_mb: number, extra: Partial<PlacementCandidate> = {}) {
  return { node_id, ram_available_mb, kvm_available: false, reserved: false, ...extra };
}

const plain = { prefer_kvm: false };
const drained = drainedReason('2026-08-06T12:00:00.000Z');

describe('placeVm and drained nodes', () => {
  it('passes a drained node over, however much room it has, and says why', () => {
    const placement = placeVm({ ...plain, ram_mb: 256 }, [
      node('big', 16384, { drained }),
      node('small', 2048),
    ]);
    expect(placement).toMatchObject({ kind: 'placed', node_id: 'small' });
    expect(placement.kind === 'placed' && placement.passed_over).toEqual([
      'big: drained since 2026-08-06T12:00:00.000Z (ppn-fleet node undrain ends it)',
    ]);
  });

  it('prefers a reserved node to a drained one', () => {
    const placement = placeVm({ ...plain, ram_mb: 256 }, [
      node('a', 16384, { drained }),
      node('r', 2048, { reserved: true }),
    ]);
    expect(placement).toMatchObject({ kind: 'placed', node_id: 'r' });
  });

  it('refuses when only drained nodes have room, naming each drained one', () => {
    const placement = placeVm({ ...plain, ram_mb: 256 }, [
      node('a', 16384, { drained }),
      node('b', 512),
    ]);
    expect(placement.kind).toBe('no-capacity');
    const message = placement.kind === 'no-capacity' ? placement.message : '';
    expect(message).toContain(`a: ${drained}`);
    expect(message).toContain('b: needs 768 MB, has 512 MB');
  });

  it('refuses a drained preferred_node (a move, restore or recovery target) with the reason', () => {
    expect(
      placeVm({ ...plain, ram_mb: 256, preferred_node: 'a' }, [node('a', 16384, { drained })]),
    ).toEqual({ kind: 'preferred-node-unfit', message: `preferred_node a: ${drained}` });
  });
});
