import {
  DRAIN_OUTCOMES_KEPT,
  decodeOutcomes,
  decodeSince,
  encodeOutcomes,
} from './node-drains.repository';

const MOVED = {
  vm_id: 'vm-1',
  outcome: 'moved' as const,
  to_node_id: 'n2',
  mode: 'cold' as const,
  message: null,
  took_ms: 1_300,
};

describe('a drain as stored', () => {
  it('reads back what it wrote, and only what is an outcome (a shared store is not trusted)', () => {
    expect(decodeOutcomes(encodeOutcomes([MOVED]))).toEqual([MOVED]);
    expect(decodeOutcomes('not json')).toEqual([]);
    expect(decodeOutcomes('{"vm_id":"vm-1"}')).toEqual([]);
    expect(
      decodeOutcomes(
        JSON.stringify([MOVED, { ...MOVED, outcome: 'gone' }, { ...MOVED, took_ms: '1' }]),
      ),
    ).toEqual([MOVED]);
    expect(decodeOutcomes(null)).toEqual([]);
  });

  it('keeps at most the newest outcomes, and a since of digits only', () => {
    const many = Array.from({ length: DRAIN_OUTCOMES_KEPT + 5 }, (_, at) => ({
      ...MOVED,
      vm_id: `vm-${at}`,
    }));
    const kept = decodeOutcomes(encodeOutcomes(many));
    expect(kept).toHaveLength(DRAIN_OUTCOMES_KEPT);
    expect(kept[0].vm_id).toBe('vm-5');
    expect(decodeSince('1764944040376')).toBe(1764944040376);
    expect(decodeSince('-1')).toBeUndefined();
    expect(decodeSince(null)).toBeUndefined();
  });
});
